// Package report owns the day's report: each desk's P&L through the India
// day drawn as a PNG chart that reads on a phone, and a caption with the
// day's figures per desk (realised and open P&L, trades, held calls and
// how they ended, the median time to a decision, model tokens and halts);
// and the week's report, the realised P&L of the last five trading days as
// bars. The bot sends them (/pnl, and at REPORT_AT on the leader through
// Daily) and the desks page serves the picture.
//
// It reads only the root package's ports: the risk store's P&L samples
// (written by the risk watcher; read here, never written), the broker's
// journal and book for the P&L now and the week's days, the desks' state
// for tokens and halts, and the audit trail for the counts. It keeps
// nothing and writes nothing.
//
// Concurrency: Day and Week read and draw on the caller's goroutine and
// share nothing, so any number may run side by side. Daily runs its job
// on the cron's goroutine, one run at a time.
package report

// Package webapp owns the desks page: a Telegram Mini App served by deskbot
// at WEBAPP_URL's path on its HTTP server. It shows the desks (state,
// positions, P&L, open requests), a desk's day (an SVG chart drawn here,
// its trades, recent tool calls, its schedule), the open requests in the
// chat's trading words with their decisions, the standing grants and the
// audit trail.
//
// Trust: the page's HTML shell and its two assets are public and carry no
// data. Everything else (views, actions, the live stream) needs the Mini
// App's initData in the X-Telegram-Init-Data header, validated as the Bot
// API documents (initdata.go) and no older than WEBAPP_MAX_AGE. Viewers
// must be approvers or members of the team's group (asked of Telegram
// through the bot, cached a minute); only approvers act. There are no
// cookies, so no CSRF; initData never travels in a URL. Desk text reaches
// the page only through html/template, and the CSP allows no inline script.
//
// Decisions go through the gate as the chat's buttons do (Gate.Decide,
// which runs an allowed call on the service's lifetime and words the
// answer the same for both; the page only says it): of a tap in the chat
// and a click on the page, the first wins and the other is told what happened;
// the outbox edits the chat's message from the decision's event wherever
// it was made. Flatten, pause and resume are the bot's own (Team).
//
// Live: one reader per process follows the event stream in a consumer
// group of its own, acknowledging at once, and fans each event out to the
// open pages as a server-sent event; a page that misses one refreshes
// anyway on the next, and every view is read fresh from the store.
package webapp

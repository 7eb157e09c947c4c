package kitetest

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// HeartbeatInterval is how often the fake sends Kite's one-byte binary
// heartbeat on an idle ticker connection. The official ticker closes and
// redials a connection that has been silent for 5 s, so a fake without it
// would see reconnects in every test longer than that.
const HeartbeatInterval = time.Second

// tickerQueue bounds the messages waiting for a slow ticker client; past it
// the connection is closed, as Kite drops consumers that do not keep up.
const tickerQueue = 1024

type wsMsg struct {
	binary bool
	data   []byte
}

type tickerConn struct {
	userID string
	ws     *websocket.Conn
	out    chan wsMsg
	done   chan struct{}
	once   sync.Once
	subs   map[uint32]string // token → mode; guarded by Server.mu
}

func (c *tickerConn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.ws.Close()
	})
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// TickerConnections counts the open ticker connections.
func (s *Server) TickerConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tickers)
}

// serveTicker is the websocket at the root, authenticated by the api_key
// and access_token query parameters the ticker adds. A bad pair is refused
// with 403 before the upgrade, as Kite does.
func (s *Server) serveTicker(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	sess := s.sessions[q.Get("access_token")]
	ok := q.Get("api_key") == s.APIKey && sess != nil && s.now().Before(sess.ends)
	s.calls = append(s.calls, Call{Method: "WEBSOCKET", Path: r.URL.Path, At: s.now(), Status: map[bool]int{true: 101, false: 403}[ok]})
	s.mu.Unlock()
	if !ok {
		http.Error(w, "Incorrect `api_key` or `access_token`.", http.StatusForbidden)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &tickerConn{userID: sess.userID, ws: ws, out: make(chan wsMsg, tickerQueue), done: make(chan struct{}), subs: map[uint32]string{}}
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		c.close()
		return
	default:
	}
	s.tickers[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		c.close()
		s.mu.Lock()
		delete(s.tickers, c)
		s.mu.Unlock()
	}()
	go c.write()
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			return
		}
		s.tickerInput(c, msg)
	}
}

// write sends queued messages and the heartbeat until the connection ends.
func (c *tickerConn) write() {
	beat := time.NewTicker(HeartbeatInterval)
	defer beat.Stop()
	send := func(m wsMsg) bool {
		_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
		kind := websocket.TextMessage
		if m.binary {
			kind = websocket.BinaryMessage
		}
		return c.ws.WriteMessage(kind, m.data) == nil
	}
	for {
		var ok bool
		select {
		case <-c.done:
			return
		case m := <-c.out:
			ok = send(m)
		case <-beat.C:
			ok = send(wsMsg{binary: true, data: []byte{0}})
		}
		if !ok {
			c.close()
			return
		}
	}
}

// tickerInput handles the client's subscribe, unsubscribe and mode
// messages: {"a":"subscribe","v":[408065]}, {"a":"mode","v":["ltp",[408065]]}.
func (s *Server) tickerInput(c *tickerConn, msg []byte) {
	var in struct {
		A string          `json:"a"`
		V json.RawMessage `json:"v"`
	}
	if json.Unmarshal(msg, &in) != nil {
		s.tickerError(c, "Invalid message.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch in.A {
	case "subscribe", "unsubscribe":
		var toks []uint32
		if json.Unmarshal(in.V, &toks) != nil {
			s.sendLocked(c, errorMsg("Invalid tokens."))
			return
		}
		for _, t := range toks {
			if in.A == "unsubscribe" {
				delete(c.subs, t)
			} else if _, ok := c.subs[t]; !ok {
				c.subs[t] = "quote" // Kite's default mode
			}
		}
	case "mode":
		var v []json.RawMessage
		var mode string
		var toks []uint32
		if json.Unmarshal(in.V, &v) != nil || len(v) != 2 || json.Unmarshal(v[0], &mode) != nil || json.Unmarshal(v[1], &toks) != nil {
			s.sendLocked(c, errorMsg("Invalid mode message."))
			return
		}
		if mode != "ltp" && mode != "quote" && mode != "full" {
			s.sendLocked(c, errorMsg("Invalid mode."))
			return
		}
		for _, t := range toks {
			c.subs[t] = mode
		}
	default:
		s.sendLocked(c, errorMsg("Invalid message."))
	}
}

func (s *Server) tickerError(c *tickerConn, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sendLocked(c, errorMsg(text))
}

func errorMsg(text string) wsMsg {
	b, _ := json.Marshal(map[string]any{"type": "error", "data": text})
	return wsMsg{data: b}
}

func (s *Server) sendLocked(c *tickerConn, m wsMsg) {
	select {
	case c.out <- m:
	case <-c.done:
	default:
		go c.close()
	}
}

func (s *Server) tickerConnsLocked(userID string) []*tickerConn {
	var out []*tickerConn
	for c := range s.tickers {
		if userID == "" || c.userID == userID {
			out = append(out, c)
		}
	}
	return out
}

// pushLocked sends an order update to the user's ticker connections:
// {"type":"order","id":"","data":{...}}, the data in the postback's shape
// (a websocket update's checksum is blank, as on Kite).
func (s *Server) pushLocked(o *order, status string) {
	conns := s.tickerConnsLocked(o.UserID)
	if len(conns) == 0 {
		return
	}
	d := o.wire(status)
	d.UserID = o.UserID
	unfilled := o.PendingQuantity()
	appID, sum := 1, ""
	d.UnfilledQuantity, d.AppID, d.Checksum = &unfilled, &appID, &sum
	b, _ := json.Marshal(map[string]any{"type": "order", "id": "", "data": d})
	for _, c := range conns {
		s.sendLocked(c, wsMsg{data: b})
	}
}

// tickLocked sends a tick of inst to the connections subscribed to it, in
// the binary packet of each one's mode (Kite's layout: LTP 8 bytes, quote
// 44, full 184): the last price, and in quote and full the average price,
// volume and OHLC (Instrument's, else the last price), in full the last
// trade time, open interest and exchange time; the rest (quantities, the
// depth) are zero.
func (s *Server) tickLocked(inst *Instrument) {
	for c := range s.tickers {
		mode, ok := c.subs[inst.Token]
		if !ok {
			continue
		}
		s.sendLocked(c, wsMsg{binary: true, data: tickPacket(inst, mode, s.now())})
	}
}

func tickPacket(inst *Instrument, mode string, now time.Time) []byte {
	seg := inst.Token & 0xFF
	div := 100.0
	switch seg {
	case 3: // CDS
		div = 10_000_000
	case 6: // BCD
		div = 10_000
	}
	price := uint32(math.Round(inst.LastPrice * div))
	n := 8
	if seg != 9 { // indices are sent in LTP shape here
		switch mode {
		case "quote":
			n = 44
		case "full":
			n = 184
		}
	}
	p := make([]byte, n)
	binary.BigEndian.PutUint32(p[0:], inst.Token)
	binary.BigEndian.PutUint32(p[4:], price)
	if n >= 44 {
		o, h, l, c := inst.ohlc()
		binary.BigEndian.PutUint32(p[12:], price)               // average traded price
		binary.BigEndian.PutUint32(p[16:], uint32(inst.Volume)) // volume traded today
		for i, v := range []float64{o, h, l, c} {               // open, high, low, close
			binary.BigEndian.PutUint32(p[28+4*i:], uint32(math.Round(v*div)))
		}
	}
	if n == 184 {
		ts := uint32(now.Unix())
		binary.BigEndian.PutUint32(p[44:], ts) // last trade time
		binary.BigEndian.PutUint32(p[48:], uint32(inst.OI))
		binary.BigEndian.PutUint32(p[60:], ts) // exchange timestamp
	}
	out := make([]byte, 4, 4+n)
	binary.BigEndian.PutUint16(out[0:], 1)
	binary.BigEndian.PutUint16(out[2:], uint16(n))
	return append(out, p...)
}

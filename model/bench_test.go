package model_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/deskbot/deskbot/model/modeltest"
)

// BenchmarkComplete measures one model call against a fake that answers at
// once: the cost of the SDK, HTTP on loopback and our checks, which the
// agent's harness benchmark uses as the "model call itself". The floor is a
// bare HTTP POST of the same request body to the same fake.
func BenchmarkComplete(b *testing.B) {
	reply := modeltest.Reply{Text: "Placing the order.", ToolCalls: []modeltest.ToolCall{
		{ID: "call_1", Name: "place_order", Arguments: `{"symbol":"INFY","side":"buy","quantity":10,"price":1520.5}`},
	}}
	req := ask("Buy 10 INFY at 1520.50.")
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			srv := modeltest.New(b)
			srv.SetHandler(func(modeltest.Request) modeltest.Reply { return reply })
			m := mustNew(b, be.config(srv))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Complete(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("floor-raw-http", func(b *testing.B) {
		srv := modeltest.New(b)
		srv.SetHandler(func(modeltest.Request) modeltest.Reply { return reply })
		body := []byte(`{"model":"fake-model","messages":[{"role":"system","content":"You are the main desk."},` +
			`{"role":"user","content":"Buy 10 INFY at 1520.50."}],"tools":[{"type":"function","function":{"name":"place_order",` +
			`"description":"Place a paper order.","parameters":{"type":"object","properties":{"symbol":{"type":"string"},` +
			`"quantity":{"type":"number"}},"required":["symbol"]}}}]}`)
		client := &http.Client{}
		b.ReportAllocs()
		for b.Loop() {
			res, err := client.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	})
}

package demo

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/model/modeltest"
)

// The scripted desk model: enough of a trading desk to play a held call
// through the chat without a model server. It reads only the last message
// of the conversation, as the tests' scripts do:
//
//   - "buy 10 INFY" or "sell 5 TCS at 4100" (in a /tell or a reply to the
//     desk): place_order, which the gate holds by default;
//   - "positions": get_positions; "flatten": flatten_desk;
//   - "quote INFY": get_quote; "watch INFY above 1,600": watch_price;
//   - the gate's words on a held, allowed, denied or lapsed call: a short
//     answer in the desk's words;
//   - anything else: what it understands.

// orderRx finds an order in a person's words.
var orderRx = regexp.MustCompile(`(?i)\b(buy|sell)\s+(\d+(?:\.\d+)?)\s+([A-Za-z0-9][A-Za-z0-9&._/-]{0,31})(?:\s+(?:at|@)\s*₹?\s*(\d+(?:\.\d+)?))?`)

// watchRx finds a watch in a person's words: "watch INFY above 1,600".
var watchRx = regexp.MustCompile(`(?i)\bwatch\s+([A-Za-z0-9][A-Za-z0-9&._:/-]{0,40})\s+(above|below)\s+₹?\s*(\d[\d,]*(?:\.\d+)?)`)

// quoteRx finds a quote asked for: "quote INFY" or "quote INFY TCS".
var quoteRx = regexp.MustCompile(`(?i)\bquote\s+((?:[A-Za-z0-9][A-Za-z0-9&._:/-]{0,40}\s*)+)`)

// limitFor is the limit price the scripted desk gives an order named
// without one: a tenth through the paper market's start price (the walk
// stays within about 7% of it), so the order fills at the market's price.
func limitFor(symbol, side string) float64 {
	start, ok := broker.StartPrices[symbol]
	if !ok {
		start = broker.DefaultStartPrice
	}
	if side == deskbot.Sell {
		return math.Round(start*0.9*100) / 100
	}
	return math.Round(start*1.1*100) / 100
}

const scriptHelp = "I am the demo's scripted desk. Tell me, for example: buy 10 INFY, sell 5 TCS at 4100, quote INFY, watch INFY above 1,600, positions, or flatten."

func scriptedDesk(r modeltest.Request) modeltest.Reply {
	last := r.Last()
	text := last.Text
	if last.Role == "tool" {
		switch tool := lastCall(r); {
		case strings.Contains(text, "needs the user's permission"):
			return modeltest.Text("Asked the team to allow " + tool + ".")
		case last.IsError:
			return modeltest.Text("That did not work: " + text)
		default:
			return modeltest.Text(text)
		}
	}
	lower := strings.ToLower(text)
	switch {
	case strings.Contains(text, "The user allowed"):
		if strings.Contains(text, "It was run:") {
			_, result, _ := strings.Cut(text, "It was run:")
			return modeltest.Text("Done. " + strings.TrimSpace(firstParagraph(result)))
		}
		return modeltest.Text("It was allowed but did not go through; I will not retry it on my own.")
	case strings.Contains(text, "The user denied"):
		return modeltest.Text("Understood: I will not do it.")
	case strings.Contains(text, "lapsed at"):
		return modeltest.Text("Nobody answered in time, so I did nothing. Tell me again if it still matters.")
	}
	if m := watchRx.FindStringSubmatch(text); m != nil {
		level, _ := strconv.ParseFloat(strings.ReplaceAll(m[3], ",", ""), 64)
		args, _ := json.Marshal(map[string]any{"symbol": strings.ToUpper(m[1]), "direction": strings.ToLower(m[2]), "level": level,
			"note": "the team asked: " + strings.ToUpper(m[1]) + " " + strings.ToLower(m[2]) + " " + m[3]})
		return modeltest.Calls(modeltest.ToolCall{Name: deskbot.ToolWatchPrice, Arguments: string(args)})
	}
	if m := quoteRx.FindStringSubmatch(text); m != nil {
		symbols := strings.Fields(strings.ToUpper(m[1]))
		args, _ := json.Marshal(map[string]any{"symbols": symbols[:min(len(symbols), 50)]})
		return modeltest.Calls(modeltest.ToolCall{Name: deskbot.ToolGetQuote, Arguments: string(args)})
	}
	if m := orderRx.FindStringSubmatch(text); m != nil {
		symbol := strings.ToUpper(m[3])
		qty, _ := strconv.ParseFloat(m[2], 64)
		side := strings.ToLower(m[1])
		price := limitFor(symbol, side)
		if m[4] != "" {
			price, _ = strconv.ParseFloat(m[4], 64)
		}
		args, _ := json.Marshal(map[string]any{"symbol": symbol, "side": side, "quantity": qty, "price": price})
		return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: string(args)})
	}
	switch {
	case strings.Contains(lower, "flatten"):
		return modeltest.Calls(modeltest.ToolCall{Name: "flatten_desk", Arguments: `{}`})
	case strings.Contains(lower, "position"), strings.Contains(lower, "book"), strings.Contains(lower, "p&l"):
		return modeltest.Calls(modeltest.ToolCall{Name: "get_positions", Arguments: `{}`})
	}
	return modeltest.Text(scriptHelp)
}

// lastCall names the tool the desk called last.
func lastCall(r modeltest.Request) string {
	ms := r.Messages()
	for i := len(ms) - 1; i >= 0; i-- {
		if n := len(ms[i].ToolCalls); n > 0 {
			return ms[i].ToolCalls[n-1].Name
		}
	}
	return "the call"
}

// firstParagraph is s up to its first blank line.
func firstParagraph(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		return s[:i]
	}
	return s
}

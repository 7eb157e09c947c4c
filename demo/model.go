package demo

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/words"
)

// The scripted desk model: enough of a trading desk to play held calls
// through the chat without a model server. It acts only on a person's
// words (a /tell, or a reply to the desk), as the harness hands them over
// ("Message from Asha:" and the text):
//
//   - "buy 10 INFY" or "sell 5 TCS at 4100": place_order, which the gate
//     holds by default;
//   - "positions": get_positions; "flatten": flatten_desk;
//   - "quote INFY": get_quote; "watch INFY above 1,600": watch_price;
//   - anything else: what it understands.
//
// The rest of what reaches it is the harness speaking, and it answers as
// a careful desk would:
//
//   - the results of its own calls: a hard limit's refusal in a line for
//     people (the model's instructions cut off), a book as it is, a hold
//     with nothing (the held call speaks for itself);
//   - the answer to a held call: nothing when it ran (the request's
//     message says so), a line when it was denied, lapsed or failed;
//   - "why?" before a decision: the reason it asked, read from the turn
//     that made the call (who asked, for what, the order's exposure);
//   - a notice (the desk was flattened, halted or squared off, an order
//     changed state, a scheduled task): nothing, and the turn ends. It
//     never acts on a notice, so a notice can never make it trade.

// orderRx finds an order in a person's words.
var orderRx = regexp.MustCompile(`(?i)\b(buy|sell)\s+(\d+(?:\.\d+)?)\s+([A-Za-z0-9][A-Za-z0-9&._/-]{0,31})(?:\s+(?:at|@)\s*₹?\s*(\d+(?:\.\d+)?))?`)

// personRx finds a person's words in what the harness hands the desk: a
// line "Message from <name>:", their words after it.
var personRx = regexp.MustCompile(`(?m)Message from ([^\n]+?):\n`)

// whyRx finds the team's question before a decision, and the tool.
var whyRx = regexp.MustCompile(`The team asks why you want to run (\S+) \(request (\S+)\)`)

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

// nothing ends the turn without a word.
var nothing = modeltest.Text("")

func scriptedDesk(r modeltest.Request) modeltest.Reply {
	last := r.Last()
	if last.Role == "tool" {
		return afterCall(lastCall(r), last)
	}
	text := last.Text
	if m := whyRx.FindStringSubmatch(text); m != nil {
		return modeltest.Text(why(r, m[1]))
	}
	switch {
	case strings.Contains(text, "The user allowed"):
		if strings.Contains(text, "It was run:") {
			return nothing // the request's message shows what ran
		}
		return modeltest.Text("It was allowed but did not go through; I will not retry it on my own.")
	case strings.Contains(text, "The user denied"):
		return modeltest.Text("Understood: I will not do it.")
	case strings.Contains(text, "lapsed at"):
		return modeltest.Text("Nobody answered in time, so I did nothing. Tell me again if it still matters.")
	}
	said, ok := personSaid(text)
	if !ok {
		return nothing // a notice of the harness: never a reason to act
	}
	if call, ok := callFor(said); ok {
		return modeltest.Calls(call)
	}
	return modeltest.Text(scriptHelp)
}

// personSaid is a person's words in a message the harness handed over,
// and whether there were any.
func personSaid(text string) (string, bool) {
	loc := personRx.FindStringIndex(text)
	if loc == nil {
		return "", false
	}
	return text[loc[1]:], true
}

// callFor is the call a person's words ask for, if any.
func callFor(said string) (modeltest.ToolCall, bool) {
	if m := watchRx.FindStringSubmatch(said); m != nil {
		level, _ := strconv.ParseFloat(strings.ReplaceAll(m[3], ",", ""), 64)
		args, _ := json.Marshal(map[string]any{"symbol": strings.ToUpper(m[1]), "direction": strings.ToLower(m[2]), "level": level,
			"note": "the team asked: " + strings.ToUpper(m[1]) + " " + strings.ToLower(m[2]) + " " + m[3]})
		return modeltest.ToolCall{Name: deskbot.ToolWatchPrice, Arguments: string(args)}, true
	}
	if m := quoteRx.FindStringSubmatch(said); m != nil {
		symbols := strings.Fields(strings.ToUpper(m[1]))
		args, _ := json.Marshal(map[string]any{"symbols": symbols[:min(len(symbols), 50)]})
		return modeltest.ToolCall{Name: deskbot.ToolGetQuote, Arguments: string(args)}, true
	}
	if m := orderRx.FindStringSubmatch(said); m != nil {
		symbol := strings.ToUpper(m[3])
		qty, _ := strconv.ParseFloat(m[2], 64)
		side := strings.ToLower(m[1])
		price := limitFor(symbol, side)
		if m[4] != "" {
			price, _ = strconv.ParseFloat(m[4], 64)
		}
		args, _ := json.Marshal(map[string]any{"symbol": symbol, "side": side, "quantity": qty, "price": price})
		return modeltest.ToolCall{Name: "place_order", Arguments: string(args)}, true
	}
	lower := strings.ToLower(said)
	switch {
	case strings.Contains(lower, "flatten"):
		return modeltest.ToolCall{Name: "flatten_desk", Arguments: `{}`}, true
	case strings.Contains(lower, "position"), strings.Contains(lower, "book"), strings.Contains(lower, "p&l"):
		return modeltest.ToolCall{Name: "get_positions", Arguments: `{}`}, true
	}
	return modeltest.ToolCall{}, false
}

// afterCall answers the result of the desk's own call to tool.
func afterCall(tool string, res modeltest.Message) modeltest.Reply {
	text := res.Text
	switch {
	case strings.Contains(text, "needs the user's permission") && strings.Contains(text, "was sent to them"):
		return nothing // held: the request speaks for the call
	case strings.Contains(text, "was refused by a hard limit"):
		_, why, _ := strings.Cut(text, "nobody was asked: ")
		why, _, _ = strings.Cut(why, ". Do not split")
		return modeltest.Text("A hard limit of this desk refused " + tool + " before anyone was asked: " + why + ". I will not split it or try another way.")
	case res.IsError, strings.Contains(text, " was not run"):
		return modeltest.Text("That did not go through: " + forPeople(text))
	}
	return modeltest.Text(text)
}

// forPeople is a text the harness wrote for the model, without the
// instructions to the model that end it.
func forPeople(text string) string {
	cut := len(text)
	for _, s := range []string{" Tell the user", " End this turn", " Do not ", " Ask the user", " Ask them"} {
		if i := strings.Index(text, s); i >= 0 && i < cut {
			cut = i
		}
	}
	return strings.TrimSpace(text[:cut])
}

// why is the desk's reason for the held call to tool, read from its
// history: the turn whose call was held, the person's words that started
// it and the call's arguments.
func why(r modeltest.Request, tool string) string {
	ms := r.Messages()
	for i := len(ms) - 1; i > 0; i-- {
		if ms[i].Role != "assistant" || !strings.Contains(ms[i].Text, tool+" ") || !strings.Contains(ms[i].Text, "held for the user's permission") {
			continue
		}
		who, said := "the team", ""
		if m := personRx.FindStringSubmatch(ms[i-1].Text); m != nil {
			who = m[1]
			said, _ = personSaid(ms[i-1].Text)
			said = strings.TrimSpace(said)
		}
		if said == "" {
			break
		}
		return reason(tool, who, said, heldArguments(ms[i].Text, tool))
	}
	return "I asked for " + tool + " on the team's instruction in an earlier turn I can no longer read in full. If it is denied, I do nothing until you tell me again."
}

// heldArguments are the arguments of the held call to tool in a turn's
// note ("place_order {…} -> held for the user's permission").
func heldArguments(note, tool string) map[string]any {
	_, rest, ok := strings.Cut(note, tool+" ")
	if !ok {
		return nil
	}
	raw, _, _ := strings.Cut(rest, " -> held")
	var args map[string]any
	if json.Unmarshal([]byte(raw), &args) != nil {
		return nil
	}
	return args
}

// reason says, in a few lines, why the scripted desk asked: who told it
// to, what it expects, the risk, and what it does if denied.
func reason(tool, who, said string, args map[string]any) string {
	asked := fmt.Sprintf("%s told me %q.", who, said)
	if tool != "place_order" || args == nil {
		if tool == "flatten_desk" {
			return asked + " Flattening closes every position of this desk at the market's price: what it realises is final. If it is denied, I keep the positions as they are."
		}
		return asked + " If it is denied, I do nothing until you tell me again."
	}
	side, _ := args["side"].(string)
	symbol, _ := args["symbol"].(string)
	qty, _ := args["quantity"].(float64)
	price, _ := args["price"].(float64)
	risk := "a fall in " + symbol + "'s price"
	if side == deskbot.Sell {
		risk = "a rise in " + symbol + "'s price"
	}
	return fmt.Sprintf("%s I expect it to fill at the market's price now: my limit of %s leaves room for the market to move while you decide. Its exposure is at most %s (%s × %s), and the risk is %s while I hold it. If it is denied, I do nothing until you tell me again.",
		asked, words.Rupees(price), words.Rupees(qty*price), words.Quantity(qty), words.Rupees(price), risk)
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

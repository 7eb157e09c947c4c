package report

import (
	"bytes"
	"image/color"
	"math"
	"strings"
	"time"

	"codeberg.org/go-fonts/dejavu/dejavusans"
	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
	"golang.org/x/image/font/opentype"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The picture's size, in pixels: at 72 dots an inch a length in points is
// a length in pixels. A phone shows a photo about 400 points wide, a third
// of this, so the text is drawn large: a tick label reads at about 12
// points there.
const (
	Width  = 1200
	Height = 900
	dpi    = 72
)

// Font sizes, in pixels of the picture.
const (
	titleSize  = 46
	tickSize   = 36
	legendSize = 38
	lineWidth  = 6
)

// palette gives each desk a colour by its place among the desks: the
// Okabe–Ito colours, told apart with the common colour blindnesses, the
// yellow left out (it does not read on white).
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xD5, 0x5E, 0x00, 0xff}, // vermilion
	{0x00, 0x9E, 0x73, 0xff}, // green
	{0xCC, 0x79, 0xA7, 0xff}, // purple
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0x56, 0xB4, 0xE9, 0xff}, // sky
	{0x00, 0x00, 0x00, 0xff}, // black
}

// Colour is the colour desk i (its place in the configured desks) is drawn in.
func Colour(i int) color.RGBA { return palette[((i%len(palette))+len(palette))%len(palette)] }

// face is the picture's one face, DejaVu Sans: plot's own Liberation and
// the Go fonts have no rupee sign, and every amount starts with one. The
// cache is the report's own, so nothing of plot's defaults is changed.
var face = font.Font{Typeface: "DejaVu", Variant: "Sans"}

// texts draws the picture's text in face.
var texts = func() text.Handler {
	f, err := opentype.Parse(dejavusans.TTF)
	if err != nil {
		panic("report: the embedded DejaVu Sans does not parse: " + err.Error())
	}
	return text.Plain{Fonts: font.NewCache(font.Collection{{Font: face, Face: f}})}
}()

// sans is face at size.
func sans(size vg.Length) font.Font {
	f := face
	f.Size = size
	return f
}

// newPlot is a plot with the report's large type on both axes and the legend.
func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.TextHandler = texts
	p.Title.TextStyle.Handler = texts
	p.X.Label.TextStyle.Handler, p.Y.Label.TextStyle.Handler = texts, texts
	p.X.Tick.Label.Handler, p.Y.Tick.Label.Handler = texts, texts
	p.Legend.TextStyle.Handler = texts
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(titleSize)
	p.Title.Padding = 18
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Tick.Label.Font = sans(tickSize)
		a.Label.TextStyle.Font = sans(tickSize)
		a.LineStyle.Width = 2
		a.Tick.LineStyle.Width = 2
		a.Tick.Length = 12
		a.Padding = 6
	}
	p.Legend.TextStyle.Font = sans(legendSize)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = 16, -8
	p.Legend.ThumbnailWidth = 48
	return p
}

// png draws p as a PNG of the report's size.
func png(p *plot.Plot) ([]byte, error) {
	c := vgimg.NewWith(vgimg.UseWH(Width, Height), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(c)
	// A margin, so nothing touches the photo's edge where the chat's
	// bubble rounds it.
	p.Draw(draw.Crop(dc, 20, -36, 16, -16))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, deskbot.Errorf(deskbot.EINTERNAL, "the report could not be drawn: %v", err)
	}
	return buf.Bytes(), nil
}

// rupeeTicks labels a P&L axis in rupees as the chat writes them, Indian
// digit grouping, paise left out when there are none.
type rupeeTicks struct{}

// Every mark is labelled, at a round step that gives four to eight of them.
func (rupeeTicks) Ticks(min, max float64) []plot.Tick {
	step := niceStep((max - min) / 6)
	var ts []plot.Tick
	for v := math.Ceil(min/step) * step; v <= max; v += step {
		label := strings.TrimSuffix(words.SignedRupees(v), ".00")
		if deskbot.RoundPaise(v) == 0 {
			label = "₹0"
		}
		ts = append(ts, plot.Tick{Value: v, Label: label})
	}
	return ts
}

// niceStep is the round step (1, 2 or 5 times a power of ten) nearest
// above raw.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*pow {
			return m * pow
		}
	}
	return 10 * pow
}

// The market's hours, India time: the day chart's axis.
const (
	marketOpen  = 9*time.Hour + 15*time.Minute
	marketClose = 15*time.Hour + 30*time.Minute
)

// hourTicks labels the day chart's axis in India time: the open, the
// whole hours between, the close; 10:00 and 15:00 are unlabelled marks,
// too near the open and the close for their labels to fit.
type hourTicks struct{ midnight time.Time }

func (h hourTicks) Ticks(min, max float64) []plot.Tick {
	at := func(d time.Duration) float64 { return float64(h.midnight.Add(d).Unix()) }
	ts := []plot.Tick{{Value: at(marketOpen), Label: "09:15"}, {Value: at(10 * time.Hour)}}
	for hr := 11; hr <= 14; hr++ {
		ts = append(ts, plot.Tick{Value: at(time.Duration(hr) * time.Hour), Label: words.Time(h.midnight.Add(time.Duration(hr) * time.Hour))})
	}
	return append(ts, plot.Tick{Value: at(15 * time.Hour)}, plot.Tick{Value: at(marketClose), Label: "15:30"})
}

// drawDay draws each desk's P&L through the day, a line per desk in its
// colour with a dot at the P&L now, over the market's hours. A point
// outside them (a sample before the open; the report's own point after the
// close) is drawn at the open or the close: nothing trades then.
func drawDay(ds []DeskDay, colours []color.RGBA, now time.Time) ([]byte, error) {
	ist := now.In(deskbot.IST)
	midnight := time.Date(ist.Year(), ist.Month(), ist.Day(), 0, 0, 0, 0, deskbot.IST)
	lo, hi := float64(midnight.Add(marketOpen).Unix()), float64(midnight.Add(marketClose).Unix())
	p := newPlot("P&L, " + dayTitle(now) + ", at " + words.Time(now) + " India time")
	p.X.Min, p.X.Max = lo, hi
	p.X.Tick.Marker = hourTicks{midnight}
	p.Y.Tick.Marker = rupeeTicks{}
	ymin, ymax := 0.0, 0.0
	for i, d := range ds {
		xys := make(plotter.XYs, len(d.Curve))
		for j, s := range d.Curve {
			xys[j].X = math.Min(math.Max(float64(s.At.Unix()), lo), hi)
			xys[j].Y = s.PnL
			ymin, ymax = math.Min(ymin, s.PnL), math.Max(ymax, s.PnL)
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, deskbot.Errorf(deskbot.EINTERNAL, "the report could not be drawn: %v", err)
		}
		line.Color, line.Width = colours[i], lineWidth
		dot, err := plotter.NewScatter(xys[len(xys)-1:])
		if err != nil {
			return nil, deskbot.Errorf(deskbot.EINTERNAL, "the report could not be drawn: %v", err)
		}
		dot.GlyphStyle = draw.GlyphStyle{Color: colours[i], Radius: 11, Shape: draw.CircleGlyph{}}
		p.Add(line, dot)
		label := d.Desk + " " + strings.TrimSuffix(words.SignedRupees(d.PnL()), ".00")
		if d.Halt != nil {
			label += " (halted)"
		}
		p.Legend.Add(label, line)
	}
	span(p, ymin, ymax, len(ds))
	return png(p)
}

// span sets the P&L axis to hold 0 and every value, with room above for
// the legend's entries: one line of legendSize each, about a fourteenth
// of the plot's height.
func span(p *plot.Plot, ymin, ymax float64, entries int) {
	if ymax-ymin < 1 {
		ymin, ymax = ymin-100, ymax+100
	}
	pad := (ymax - ymin) * 0.08
	p.Y.Min, p.Y.Max = ymin-pad, ymax+pad+(ymax-ymin)*0.075*float64(entries)
	zero := plotter.NewFunction(func(float64) float64 { return 0 })
	zero.Color, zero.Width, zero.Dashes = color.Gray{0x80}, 2, []vg.Length{12, 8}
	p.Add(zero)
}

// drawWeek draws each desk's realised P&L per trading day as bars side by
// side, a colour per desk.
func drawWeek(ws []DeskWeek, colours []color.RGBA, days []string) ([]byte, error) {
	p := newPlot("Realised P&L, last five trading days")
	labels := make([]string, len(days))
	for i, d := range days {
		// Two lines: five days side by side do not fit on one.
		labels[i] = strings.Replace(shortDay(d), " ", "\n", 1)
	}
	p.NominalX(labels...)
	p.Y.Tick.Marker = rupeeTicks{}
	// Five groups share about 1,000 pixels: each desk's bar takes its part
	// of 150 of a group's 200.
	w := vg.Length(150 / max(len(ws), 1))
	ymin, ymax := 0.0, 0.0
	for i, wk := range ws {
		vs := make(plotter.Values, len(wk.Days))
		for j, d := range wk.Days {
			vs[j] = d.Realised
			ymin, ymax = math.Min(ymin, d.Realised), math.Max(ymax, d.Realised)
		}
		bars, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return nil, deskbot.Errorf(deskbot.EINTERNAL, "the report could not be drawn: %v", err)
		}
		bars.Color, bars.LineStyle.Width = colours[i], 0
		bars.Offset = w * (vg.Length(i) - vg.Length(len(ws)-1)/2)
		p.Add(bars)
		p.Legend.Add(wk.Desk+" "+strings.TrimSuffix(words.SignedRupees(wk.Total()), ".00"), bars)
	}
	span(p, ymin, ymax, len(ws))
	p.X.Min, p.X.Max = -0.6, float64(len(days))-0.4
	return png(p)
}

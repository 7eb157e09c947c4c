package telegramtest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Tags Telegram's HTML parse mode supports.
var htmlTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "span": true, "tg-spoiler": true,
	"a": true, "code": true, "pre": true, "blockquote": true, "tg-emoji": true,
}

var htmlEntities = map[string]string{"lt": "<", "gt": ">", "amp": "&", "quot": `"`}

// parseHTML checks s the way Telegram's HTML parse mode does, strictly: only
// supported tags, properly nested and closed; '<' and '&' only as part of a
// tag or entity. It returns the text people read.
func parseHTML(s string) (string, error) {
	var (
		out   strings.Builder
		stack []string
	)
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			end, name, closing, err := scanTag(s, i)
			if err != nil {
				return "", err
			}
			if closing {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return "", fmt.Errorf("unexpected end tag at byte offset %d", i)
				}
				stack = stack[:len(stack)-1]
			} else {
				stack = append(stack, name)
			}
			i = end
		case '&':
			semi := strings.IndexByte(s[i:], ';')
			if semi < 0 || semi > 12 {
				return "", fmt.Errorf("character '&' at byte offset %d is not part of an entity", i)
			}
			text, ok := decodeEntity(s[i+1 : i+semi])
			if !ok {
				return "", fmt.Errorf("unsupported HTML entity %q at byte offset %d", s[i:i+semi+1], i)
			}
			out.WriteString(text)
			i += semi + 1
		case '>':
			return "", fmt.Errorf("character '>' at byte offset %d is not part of a tag", i)
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				return "", fmt.Errorf("text must be encoded in UTF-8")
			}
			out.WriteString(s[i : i+n])
			i += n
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("can't find end tag corresponding to start tag %q", stack[len(stack)-1])
	}
	return out.String(), nil
}

// scanTag reads the tag starting at s[i] == '<'.
func scanTag(s string, i int) (end int, name string, closing bool, err error) {
	j := i + 1
	if j < len(s) && s[j] == '/' {
		closing = true
		j++
	}
	k := j
	for k < len(s) && (s[k] >= 'a' && s[k] <= 'z' || s[k] >= 'A' && s[k] <= 'Z' || s[k] >= '0' && s[k] <= '9' || s[k] == '-') {
		k++
	}
	name = strings.ToLower(s[j:k])
	if name == "" {
		return 0, "", false, fmt.Errorf("character '<' at byte offset %d is not part of a tag", i)
	}
	if !htmlTags[name] {
		return 0, "", false, fmt.Errorf("unsupported start tag %q at byte offset %d", name, i)
	}
	var quote byte
	for ; k < len(s); k++ {
		c := s[k]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			if closing {
				return 0, "", false, fmt.Errorf("end tag %q has attributes at byte offset %d", name, i)
			}
			quote = c
		case c == '>':
			return k + 1, name, closing, nil
		case c == '<':
			return 0, "", false, fmt.Errorf("unclosed start tag at byte offset %d", i)
		}
	}
	return 0, "", false, fmt.Errorf("unclosed start tag at byte offset %d", i)
}

func decodeEntity(name string) (string, bool) {
	if t, ok := htmlEntities[name]; ok {
		return t, true
	}
	num, ok := strings.CutPrefix(name, "#")
	if !ok || num == "" {
		return "", false
	}
	base := 10
	if h, ok := strings.CutPrefix(num, "x"); ok {
		num, base = h, 16
	} else if h, ok := strings.CutPrefix(num, "X"); ok {
		num, base = h, 16
	}
	n, err := strconv.ParseUint(num, base, 32)
	if err != nil || n == 0 || n > utf8.MaxRune {
		return "", false
	}
	return string(rune(n)), true
}

// CheckHTML checks text as Telegram's HTML parse mode would (strictly, as
// the fake does) and returns what people would read. Renderers use it in
// their tests.
func CheckHTML(text string) (plain string, err error) { return parseHTML(text) }

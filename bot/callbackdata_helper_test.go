package bot

// CallbackData returns the wire form of a button's data, as Telegram sends
// it back.
func CallbackData(action, arg string) string { return "\f" + action + "|" + arg }

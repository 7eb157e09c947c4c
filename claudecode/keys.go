package claudecode

import "time"

// sessionKey is the note holding desk's Claude session id: the one key
// this package names.
func sessionKey(desk string) string { return "claude-code:session:" + desk }

// sessionTTL lets a desk unused for this long start a new conversation.
const sessionTTL = 30 * 24 * time.Hour

package config

import (
	"regexp"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/webapp"
)

// webAppName is a Mini App's short name as @BotFather accepts it.
var webAppName = regexp.MustCompile(`^[A-Za-z0-9_]{3,30}$`)

// webAppProblems checks the WEBAPP_* variables.
func (c Config) webAppProblems() []string {
	var p []string
	if c.WebAppURL != "" {
		if _, err := webapp.CheckURL(c.WebAppURL); err != nil {
			p = append(p, deskbot.ErrorMessage(err)) // it names WEBAPP_URL

		}
	} else if c.WebAppName != "" {
		p = append(p, "WEBAPP_NAME: needs WEBAPP_URL, the page's https address")
	}
	if c.WebAppName != "" && !webAppName.MatchString(c.WebAppName) {
		p = append(p, "WEBAPP_NAME: the Mini App's short name from @BotFather: 3 to 30 letters, digits or underscores")
	}
	switch {
	case c.WebAppMaxAge <= 0:
		p = append(p, "WEBAPP_MAX_AGE: must be a positive duration such as 1h")
	case c.WebAppMaxAge > maxWebAppAge:
		// initData is an approver's bearer credential until then, and
		// Telegram signs a fresh one at every opening of the page.
		p = append(p, "WEBAPP_MAX_AGE: at most 24h: until then a copy of a page's sign-in acts as its approver, and Telegram signs a new one whenever the page is opened")
	}
	return p
}

// maxWebAppAge bounds WEBAPP_MAX_AGE.
const maxWebAppAge = 24 * time.Hour

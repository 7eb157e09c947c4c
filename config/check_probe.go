package config

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot/model"
)

// The probes speak plain HTTP rather than through telebot or the model
// SDKs: they must not start anything, and every error they print is built
// here, so a URL carrying the bot token never reaches the screen.

var probeClient = &http.Client{Timeout: 10 * time.Second}

// tgCall calls a Bot API method. A failure to reach Telegram is an error;
// Telegram's refusal is returned as ok=false with its code and description.
func tgCall(ctx context.Context, cfg Config, method string, params map[string]string) (result json.RawMessage, code int, desc string, err error) {
	form := url.Values{}
	for k, v := range params {
		form.Set(k, v)
	}
	endpoint := strings.TrimRight(cfg.TelegramAPIURL, "/") + "/bot" + cfg.TelegramToken + "/" + method
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, 0, "", fmt.Errorf("bad TELEGRAM_API_URL")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := probeClient.Do(req)
	if err != nil {
		return nil, 0, "", fmt.Errorf("cannot reach %s", hostOf(cfg.TelegramAPIURL))
	}
	defer resp.Body.Close()
	var body struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return nil, 0, "", fmt.Errorf("%s answered HTTP %d, not the Bot API", hostOf(cfg.TelegramAPIURL), resp.StatusCode)
	}
	if !body.OK {
		return nil, body.ErrorCode, strings.ReplaceAll(body.Description, cfg.TelegramToken, "[token]"), nil
	}
	return body.Result, 0, "", nil
}

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return "the server"
}

func (c *checker) telegram(ctx context.Context, cfg Config) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	res, code, desc, err := tgCall(ctx, cfg, "getMe", nil)
	if err != nil {
		c.add("telegram", statusFail, "%v", err)
		return
	}
	if code != 0 {
		if code == 401 || code == 404 {
			c.add("telegram", statusFail, "TELEGRAM_TOKEN refused (%d %s): copy it again from @BotFather", code, desc)
		} else {
			c.add("telegram", statusFail, "getMe refused: %d %s", code, desc)
		}
		return
	}
	var me struct {
		ID       int64  `json:"id"`
		Username string `json:"username"`
	}
	_ = json.Unmarshal(res, &me)
	c.add("telegram", statusOK, "token valid: the bot is @%s", me.Username)

	res, code, desc, err = tgCall(ctx, cfg, "getChatMember", map[string]string{
		"chat_id": strconv.FormatInt(cfg.TelegramChatID, 10), "user_id": strconv.FormatInt(me.ID, 10),
	})
	if err != nil {
		c.add("telegram chat", statusFail, "%v", err)
		return
	}
	if code != 0 {
		c.add("telegram chat", statusFail, "chat %d: %s (is TELEGRAM_CHAT_ID right? ask /whoami in the group)", cfg.TelegramChatID, desc)
		return
	}
	var member struct {
		Status          string `json:"status"`
		IsMember        *bool  `json:"is_member"`
		CanManageTopics bool   `json:"can_manage_topics"`
		CanPinMessages  bool   `json:"can_pin_messages"`
	}
	_ = json.Unmarshal(res, &member)
	switch {
	case member.Status == "left" || member.Status == "kicked" || (member.Status == "restricted" && member.IsMember != nil && !*member.IsMember):
		c.add("telegram chat", statusFail, "the bot is not a member of chat %d (%s): add it to the group", cfg.TelegramChatID, member.Status)
		return
	default:
		c.add("telegram chat", statusOK, "the bot is in chat %d (%s)", cfg.TelegramChatID, member.Status)
	}
	if cfg.TelegramTopics {
		c.topics(ctx, cfg, member.Status, member.CanManageTopics)
	}
	if cfg.TelegramPin {
		c.pin(cfg, member.Status, member.CanPinMessages)
	}
}

// pin checks what TELEGRAM_PIN needs: the bot an administrator with the
// right to pin messages (the group's creator has every right). Without it
// held calls still come, unpinned, so a missing right is a warning.
func (c *checker) pin(cfg Config, status string, canPin bool) {
	switch {
	case status == "creator" || status == "administrator" && canPin:
		c.add("telegram pin", statusOK, "the bot may pin held calls in chat %d", cfg.TelegramChatID)
	default:
		c.add("telegram pin", statusWarn, "TELEGRAM_PIN is on, but the bot may not pin messages in chat %d (can_pin_messages): make it an administrator with that right (until then held calls are not pinned)", cfg.TelegramChatID)
	}
}

// topics checks what TELEGRAM_TOPICS needs: a forum supergroup, and the
// bot an administrator with the right to manage topics. Without them the
// service still runs, with every desk in the General topic, so a missing
// right is a warning.
func (c *checker) topics(ctx context.Context, cfg Config, status string, canManage bool) {
	res, code, desc, err := tgCall(ctx, cfg, "getChat", map[string]string{"chat_id": strconv.FormatInt(cfg.TelegramChatID, 10)})
	if err != nil {
		c.add("telegram topics", statusFail, "%v", err)
		return
	}
	var chat struct {
		IsForum bool `json:"is_forum"`
	}
	_ = json.Unmarshal(res, &chat)
	switch {
	case code != 0:
		c.add("telegram topics", statusWarn, "getChat refused: %d %s", code, desc)
	case !chat.IsForum:
		c.add("telegram topics", statusWarn, "TELEGRAM_TOPICS is on, but chat %d has no topics: turn Topics on in the group's settings (until then desks speak in General)", cfg.TelegramChatID)
	case status != "administrator" && status != "creator" || !canManage:
		c.add("telegram topics", statusWarn, "TELEGRAM_TOPICS is on, but the bot may not manage topics in chat %d (can_manage_topics): make it an administrator with that right (until then desks speak in General)", cfg.TelegramChatID)
	default:
		c.add("telegram topics", statusOK, "the bot may create a topic per desk in chat %d", cfg.TelegramChatID)
	}
}

func modelLabel(mc model.Config) string {
	if mc.Name != "" {
		return mc.Name
	}
	return mc.Provider + ":" + mc.Model
}

// probeModel asks the endpoint for its model list: cheap, free on paid
// APIs, and served by OpenAI, Ollama, vLLM, llama.cpp and Anthropic alike.
func probeModel(ctx context.Context, mc model.Config) (status, detail string) {
	base := mc.BaseURL
	if mc.Provider == model.Anthropic {
		if base == "" {
			base = model.DefaultAnthropicBaseURL
		}
		base = strings.TrimRight(base, "/") + "/v1"
	} else if base == "" {
		base = model.DefaultOpenAIBaseURL
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/models", nil)
	if err != nil {
		return statusFail, "bad base URL"
	}
	if mc.APIKey != "" {
		if mc.Provider == model.Anthropic {
			req.Header.Set("x-api-key", mc.APIKey)
		} else {
			req.Header.Set("Authorization", "Bearer "+mc.APIKey)
		}
	}
	if mc.Provider == model.Anthropic {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return statusFail, fmt.Sprintf("no answer from %s (is the model server running?)", hostOf(base))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == 401 || resp.StatusCode == 403:
		return statusFail, fmt.Sprintf("%s refused the API key (HTTP %d)", hostOf(base), resp.StatusCode)
	case resp.StatusCode == 404:
		return statusOK, fmt.Sprintf("%s answers (it lists no models)", hostOf(base))
	case resp.StatusCode >= 400:
		return statusFail, fmt.Sprintf("%s answered HTTP %d", hostOf(base), resp.StatusCode)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&list) != nil || len(list.Data) == 0 {
		return statusOK, fmt.Sprintf("%s answers", hostOf(base))
	}
	var ids []string
	for _, m := range list.Data {
		if m.ID == mc.Model || m.ID == mc.Model+":latest" {
			return statusOK, fmt.Sprintf("%s serves %s", hostOf(base), mc.Model)
		}
		ids = append(ids, m.ID)
	}
	if len(ids) > 8 {
		ids = append(ids[:8], "…")
	}
	return statusWarn, fmt.Sprintf("%s answers but does not list %s (it has %s)", hostOf(base), mc.Model, strings.Join(ids, ", "))
}

package deskbot

// The tools' names, as the desks' models call them. They are part of the
// contract with the models, with APPROVAL_TOOLS and with DESKS_FILE's tools
// lists, and the bot and the page render broker calls in trading words, so
// every package names a tool through these and never spells it.
const (
	ToolBash            = "bash"
	ToolBashBackground  = "bash_background"
	ToolCheckBackground = "check_background"
	ToolSendMessage     = "send_message"
	ToolGetPositions    = "get_positions"
	ToolPlaceOrder      = "place_order"
	ToolFlattenDesk     = "flatten_desk"
	ToolGetOrders       = "get_orders"
	ToolCancelOrder     = "cancel_order"
	// ToolModifyOrder changes one of a desk's own open orders. It is
	// guarded with place_order: APPROVAL_TOOLS naming place_order guards
	// it too (config).
	ToolModifyOrder = "modify_order"
	ToolPlaceGTT    = "place_gtt"
	ToolCancelGTT   = "cancel_gtt"

	// The market tools: read-only, so unguarded unless APPROVAL_TOOLS
	// names them.
	ToolGetQuote          = "get_quote"
	ToolGetCandles        = "get_candles"
	ToolSearchInstruments = "search_instruments"
	ToolGetOptionChain    = "get_option_chain"
	ToolGetFunds          = "get_funds"
	ToolWatchPrice        = "watch_price"
	ToolCancelWatch       = "cancel_watch"
)

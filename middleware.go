package corral

import "github.com/corral-go/corral/consumer"

// Use adds middleware around every handler of the Client, those declared
// before it and after, as consumer.Group.Use does. The order, outermost
// first: the handler's timeout and panic recovery; the Client's
// middleware, in the order Use added it; the handler's own
// consumer.Config.Middleware; the handler. Middleware added while the
// Client runs applies to the messages that start after Use returns. The
// middleware package has logging and deduplication. Use is safe for
// concurrent use.
func (c *Client) Use(mw ...consumer.Middleware) { c.consumers.Use(mw...) }

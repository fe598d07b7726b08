package web

// MutableStrings builds the server with Fiber's default (views of fasthttp's
// buffers instead of copies), so that a benchmark can price Immutable.
func MutableStrings() Option { return func(o *options) { o.mutable = true } }

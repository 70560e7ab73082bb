// The Prometheus metrics endpoint's one route: `GET /metrics` (and HEAD) renders the figures, another method on it is
// 405, any other path 404. HTTPServer.swift does the sockets; the figures are StatsSnapshot.swift.

/// Answers requests to the metrics port.
enum MetricsEndpoint {
    /// The response to `head`; `render` gives the Prometheus text, called only for `/metrics`.
    static func response(to head: HTTPRequestHead, render: () -> String) -> HTTPResponse {
        switch (head.path, head.method) {
        case ("/metrics", "GET"), ("/metrics", "HEAD"):
            return HTTPResponse(
                status: 200, reason: "OK", headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                body: Array(render().utf8))
        case ("/metrics", _):
            return .text(405, "Method Not Allowed", "only GET and HEAD\n", headers: [("Allow", "GET, HEAD")])
        default:
            return .text(404, "Not Found", "not found: try /metrics\n")
        }
    }
}

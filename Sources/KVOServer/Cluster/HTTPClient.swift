// A small non-blocking HTTP/1.1 client on the loop, enough for etcd's JSON gateway: one POST per connection
// (`Connection: close`), a deadline per request, a response read whole (Content-Length, chunked, or up to EOF).
// No keep-alive, no redirects: etcd answers small JSON documents. Over TLS (https:// endpoints) with a client context
// (ClientStream.swift).
import TLS
import UVLoop

/// An HTTP response: the status and the body (chunks joined).
struct EtcdHTTPResponse: Sendable {
    var status: Int
    var body: [UInt8]
}

/// Why a request got no response.
struct HTTPClientError: Error, CustomStringConvertible {
    var description: String
}

/// One request in flight. Loop-owned.
@MainActor
final class HTTPRequest {
    private let completion: (Result<EtcdHTTPResponse, HTTPClientError>) -> Void
    private var stream: (any ClientStream)?
    private var timer: LoopTimer?
    private var received: [UInt8] = []
    private var isDone = false

    /// Sends `POST path` with a JSON `body` to `host:port`; `completion` runs once, from the loop, with the response
    /// or why there is none (refused, reset, timed out after `timeoutMilliseconds`, malformed). Never calls it
    /// synchronously.
    @discardableResult
    static func post(
        loop: EventLoop, host: String, port: Int, path: String, body: [UInt8], timeoutMilliseconds: UInt64,
        tls: TLSContext? = nil, completion: @escaping @MainActor (Result<EtcdHTTPResponse, HTTPClientError>) -> Void
    ) -> HTTPRequest {
        let request = HTTPRequest(completion: completion)
        var head = "POST \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: application/json\r\n"
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let bytes = Array(head.utf8) + body
        do {
            let timer = try LoopTimer(loop: loop)
            request.timer = timer
            try timer.start(afterMilliseconds: timeoutMilliseconds) { [weak request] in
                request?.finish(.failure(HTTPClientError(description: "timed out after \(timeoutMilliseconds) ms")))
            }
            try openClientStream(loop: loop, host: host, port: port, tls: tls) { [weak request] stream, error in
                guard let stream else {
                    request?.finish(.failure(HTTPClientError(description: "connect: \(error ?? "?")")))
                    return
                }
                guard let request, !request.isDone else {
                    stream.close()
                    return
                }
                request.started(stream, sending: bytes)
            }
        } catch {
            // Reported from the loop, as every other outcome (a zero timer: the next turn).
            let failure = HTTPClientError(description: "\(error)")
            if let timer = request.timer {
                try? timer.start(afterMilliseconds: 0) { [weak request] in request?.finish(.failure(failure)) }
            }
        }
        return request
    }

    private init(completion: @escaping (Result<EtcdHTTPResponse, HTTPClientError>) -> Void) {
        self.completion = completion
    }

    /// Gives up on the request: the completion is not called.
    func cancel() {
        self.isDone = true
        self.cleanUp()
    }

    private func started(_ stream: any ClientStream, sending bytes: [UInt8]) {
        self.stream = stream
        stream.onRead = { [weak self] chunk in
            guard let self else { return }
            self.received.append(contentsOf: chunk)
            if let response = Self.parse(self.received, atEOF: false) { self.finish(response) }
        }
        stream.whenEnded { [weak self] error in
            guard let self else { return }
            if let error, self.received.isEmpty {
                self.finish(.failure(HTTPClientError(description: "\(error)")))
            } else {
                self.finish(Self.parse(self.received, atEOF: true) ?? .failure(HTTPClientError(description: "truncated")))
            }
        }
        stream.write(bytes)
        do {
            try stream.startReading()
        } catch {
            self.finish(.failure(HTTPClientError(description: "\(error)")))
        }
    }

    private func finish(_ result: Result<EtcdHTTPResponse, HTTPClientError>) {
        guard !self.isDone else { return }
        self.isDone = true
        self.cleanUp()
        self.completion(result)
    }

    private func cleanUp() {
        self.stream?.close()
        self.stream = nil
        self.timer?.close()
        self.timer = nil
    }

    // MARK: - Parsing

    /// The response in `bytes` when it is complete (or, at EOF, as much as there is); nil: wait for more.
    static func parse(_ bytes: [UInt8], atEOF: Bool) -> Result<EtcdHTTPResponse, HTTPClientError>? {
        guard let headEnd = Self.find([13, 10, 13, 10], in: bytes, from: 0) else {
            return atEOF ? .failure(HTTPClientError(description: "no response head")) : nil
        }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self)
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            return .failure(HTTPClientError(description: "malformed status line"))
        }
        var contentLength: Int?
        var chunked = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces.lowercased()
            if name == "content-length" { contentLength = Int(value) }
            if name == "transfer-encoding" && value.contains("chunked") { chunked = true }
        }
        let bodyStart = headEnd + 4
        if chunked {
            var body: [UInt8] = []
            var index = bodyStart
            while true {
                guard let lineEnd = Self.find([13, 10], in: bytes, from: index) else { break }
                let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self)
                guard let size = Int(sizeText.split(separator: ";").first.map(String.init) ?? "", radix: 16) else {
                    return .failure(HTTPClientError(description: "malformed chunk size"))
                }
                if size == 0 { return .success(EtcdHTTPResponse(status: status, body: body)) }
                let dataStart = lineEnd + 2
                guard dataStart + size + 2 <= bytes.count else { break }
                body.append(contentsOf: bytes[dataStart..<dataStart + size])
                index = dataStart + size + 2
            }
            return atEOF ? .success(EtcdHTTPResponse(status: status, body: body)) : nil
        }
        if let contentLength {
            if bytes.count - bodyStart >= contentLength {
                return .success(EtcdHTTPResponse(status: status, body: Array(bytes[bodyStart..<bodyStart + contentLength])))
            }
            return atEOF ? .failure(HTTPClientError(description: "truncated body")) : nil
        }
        return atEOF ? .success(EtcdHTTPResponse(status: status, body: Array(bytes[bodyStart...]))) : nil
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= bytes.count {
            if bytes[index] == needle[0] && Array(bytes[index..<index + needle.count]) == needle { return index }
            index += 1
        }
        return nil
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" || text.last == "\r" { text = text.dropLast() }
        return text
    }
}

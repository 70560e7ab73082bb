// etcd's JSON gateway as kvod-bench reads it: pipelined responses with a Content-Length, a chunked watch stream cut
// at every byte, the watch messages etcd 3.4 writes (created, events, progress, canceled, errors) and base64.

import PeerProtocols
import Testing

struct EtcdGatewayTests {
    /// What the reader reports for `wire` fed in pieces of `step` bytes: statuses, bodies (per response) and failure.
    static func read(_ wire: [UInt8], step: Int) -> (statuses: [Int], bodies: [String], failure: String?) {
        var reader = HTTPResponseReader()
        var statuses: [Int] = []
        var bodies: [String] = []
        var body: [UInt8] = []
        var start = 0
        while start < wire.count {
            let piece = Array(wire[start..<min(start + step, wire.count)])
            let failure = piece.withUnsafeBytes { chunk in
                reader.feed(chunk) { event in
                    switch event {
                    case .head(let status): statuses.append(status)
                    case .body(let bytes): body.append(contentsOf: bytes)
                    case .end:
                        bodies.append(String(decoding: body, as: UTF8.self))
                        body.removeAll()
                    }
                }
            }
            if let failure { return (statuses, bodies, failure) }
            start += step
        }
        if !body.isEmpty { bodies.append(String(decoding: body, as: UTF8.self) + "…") }
        return (statuses, bodies, nil)
    }

    static let put = "{\"header\":{\"cluster_id\":\"1\",\"revision\":\"2\"}}"
    static let pipelined = Array(
        ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(put.utf8.count)\r\n\r\n\(put)"
            + "HTTP/1.1 200 OK\r\ncontent-length: \(put.utf8.count)\r\n\r\n\(put)"
            + "HTTP/1.1 204 No Content\r\n\r\n").utf8)

    static let created = #"{"result":{"header":{"cluster_id":"1","revision":"1","raft_term":"2"},"created":true}}"#
    static let event =
        #"{"result":{"header":{"revision":"3"},"events":[{"kv":{"key":"aw==","create_revision":"2","mod_revision":"2","version":"1","value":"MTo=" }},"#
        + #"{"type":"DELETE","kv":{"key":"aw==","mod_revision":"3"}}]}}"#
    static let chunked = Array(
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + String(created.utf8.count + 1, radix: 16) + "\r\n\(created)\n\r\n"
            + String(event.utf8.count + 1, radix: 16) + ";ext=1\r\n\(event)\n\r\n0\r\nX-Trailer: y\r\n\r\n").utf8)

    @Test func pipelinedResponsesAtEveryCut() {
        for step in [1, 2, 7, 100, Self.pipelined.count] {
            let (statuses, bodies, failure) = Self.read(Self.pipelined, step: step)
            #expect(failure == nil)
            #expect(statuses == [200, 200, 204], "step \(step)")
            #expect(bodies == [Self.put, Self.put, ""], "step \(step)")
        }
    }

    @Test func chunkedWatchStreamAtEveryCut() {
        for step in [1, 3, 64, Self.chunked.count] {
            let (statuses, bodies, failure) = Self.read(Self.chunked, step: step)
            #expect(failure == nil)
            #expect(statuses == [200])
            #expect(bodies == ["\(Self.created)\n\(Self.event)\n"], "step \(step)")
        }
    }

    @Test func badResponsesFail() {
        for text in [
            "SPDY/3 200 OK\r\n\r\n", "HTTP/1.1 abc OK\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -4\r\n\r\n",
            "HTTP/1.1 200 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY",
        ] {
            #expect(Self.read(Array(text.utf8), step: 1000).failure != nil, "\(text.debugDescription)")
        }
    }

    @Test func watchMessages() throws {
        #expect(try EtcdWatchMessage.parse(Self.created) == .created(watchID: 0, revision: 1))
        let events = try EtcdWatchMessage.parse(Self.event)
        #expect(
            events
                == .events(
                    watchID: 0,
                    [
                        .init(isDelete: false, key: Array("k".utf8), modRevision: 2, value: Array("1:".utf8)),
                        .init(isDelete: true, key: Array("k".utf8), modRevision: 3, value: []),
                    ]))
        #expect(
            try EtcdWatchMessage.parse(#"{"result":{"header":{"revision":"9"},"watch_id":"7"}}"#) == .progress(revision: 9))
        #expect(
            try EtcdWatchMessage.parse(#"{"result":{"canceled":true,"cancel_reason":"compacted"}}"#)
                == .canceled(reason: "compacted"))
        #expect(
            try EtcdWatchMessage.parse(#"{"error":{"grpc_code":14,"http_code":503,"message":"unavailable"}}"#)
                == .error("unavailable"))
        for bad in [
            "", "[]", "{}", #"{"result":5}"#, #"{"result":{"events":{}}}"#, #"{"result":{"events":[{}]}}"#,
            #"{"result":{"events":[{"kv":{"key":"aw=="}}]}}"#,
            #"{"result":{"events":[{"kv":{"key":"!!","mod_revision":"2"}}]}}"#,
            #"{"result":{"events":[{"type":"MERGE","kv":{"key":"aw==","mod_revision":"2"}}]}}"#,
            #"{"result":{"header":{"revision":"x"}}}"#,
        ] {
            #expect(throws: EtcdWatchError.self, "\(bad)") { try EtcdWatchMessage.parse(bad) }
        }
    }

    @Test func requestsAndBase64() {
        var bytes: [UInt8] = []
        EtcdGateway.appendPut(key: Array("k".utf8), value: Array("12:0:3".utf8), host: "127.0.0.1:2379", to: &bytes)
        let body = #"{"key":"aw==","value":"MTI6MDoz"}"#
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == "POST /v3/kv/put HTTP/1.1\r\nHost: 127.0.0.1:2379\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
        for text in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            let encoded = PeerBase64.encode(Array(text.utf8))
            #expect(PeerBase64.decode(encoded) == Array(text.utf8), "\(text)")
        }
        #expect(PeerBase64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(PeerBase64.encode(Array("fo".utf8)) == "Zm8=")
        for bad in ["Zm8", "Zm=8", "Z===", "Zm9v!mFy", "=Zm8"] { #expect(PeerBase64.decode(bad) == nil, "\(bad)") }
    }
}

// The NATS core parser kvod-bench reads nats-server with: every server operation, MSG framing with and without a
// reply subject, a message split at every byte (the parser must say "incomplete", never guess), and bad input.

import PeerProtocols
import Testing

struct NATSParserTests {
    /// Every event in `text`, parsed from the start; the outcome that stopped the parse (incomplete or invalid).
    static func parseAll(_ text: [UInt8]) -> (events: [NATSEvent], payloads: [String], stop: NATSParser.Outcome) {
        text.withUnsafeBufferPointer { bytes in
            var position = 0
            var events: [NATSEvent] = []
            var payloads: [String] = []
            while true {
                let outcome = NATSParser.parse(bytes, at: position)
                guard case .complete(let event, let next) = outcome else { return (events, payloads, outcome) }
                #expect(next > position)
                events.append(event)
                if case .message(_, _, let payload) = event {
                    payloads.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[payload]), as: UTF8.self))
                }
                position = next
            }
        }
    }

    @Test func everyOperation() {
        let wire = Array(
            ("INFO {\"server_id\":\"x\",\"max_payload\":1048576}\r\n+OK\r\nPING\r\npong\r\n"
                + "MSG k 1 5\r\nhello\r\nMSG a.b 42 inbox.7 3\r\nxyz\r\n-ERR 'Unknown Subject'\r\n").utf8)
        let (events, payloads, stop) = Self.parseAll(wire)
        #expect(stop == .incomplete)
        #expect(events.count == 7)
        guard events.count == 7 else { return }
        guard case .info(let info) = events[0] else { Issue.record("not INFO: \(events[0])"); return }
        #expect(String(decoding: wire[info], as: UTF8.self) == "{\"server_id\":\"x\",\"max_payload\":1048576}")
        #expect(events[1] == .ok)
        #expect(events[2] == .ping)
        #expect(events[3] == .pong)
        guard case .message(let subject, let sid, _) = events[4], case .message(let subject2, let sid2, _) = events[5]
        else { Issue.record("not MSG: \(events[4]) \(events[5])"); return }
        #expect(String(decoding: wire[subject], as: UTF8.self) == "k")
        #expect(sid == 1)
        #expect(String(decoding: wire[subject2], as: UTF8.self) == "a.b")
        #expect(sid2 == 42)
        #expect(payloads == ["hello", "xyz"])
        #expect(events[6] == .error("Unknown Subject"))
    }

    @Test func payloadMayHoldCRLFAndBeEmpty() {
        let (events, payloads, stop) = Self.parseAll(Array("MSG k 1 4\r\na\r\nb\r\nMSG k 1 0\r\n\r\nPING\r\n".utf8))
        #expect(stop == .incomplete)
        #expect(payloads == ["a\r\nb", ""])
        #expect(events.last == .ping)
    }

    /// A message cut anywhere is incomplete until its last byte, then whole.
    @Test func splitAtEveryByte() {
        let message = Array("MSG subject.x 7 12\r\n123:0:456789\r\n".utf8)
        for cut in 0..<message.count {
            let outcome = Array(message[..<cut]).withUnsafeBufferPointer { NATSParser.parse($0, at: 0) }
            #expect(outcome == .incomplete, "cut at \(cut)")
        }
        let (_, payloads, _) = Self.parseAll(message)
        #expect(payloads == ["123:0:456789"])
    }

    @Test func badInputIsInvalid() {
        for text in [
            "MSG k 1\r\n", "MSG k x 5\r\nhello\r\n", "MSG k 1 y\r\n", "MSG k 1 3\r\nabcd\r\n", "HELLO\r\n",
            "HMSG k 1 10 12\r\n", "MSG k 1 99999999\r\n",
        ] {
            let outcome = Array(text.utf8).withUnsafeBufferPointer { NATSParser.parse($0, at: 0) }
            guard case .invalid = outcome else {
                Issue.record("\(text.debugDescription) gave \(outcome)")
                continue
            }
        }
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: NATSParser.maxControlLine + 10)
        let outcome = long.withUnsafeBufferPointer { NATSParser.parse($0, at: 0) }
        guard case .invalid = outcome else { Issue.record("an endless control line gave \(outcome)"); return }
    }

    /// The reader over reads of every size gives the same messages as one parse of the whole.
    @Test func readerAcrossReads() {
        let wire = Array("INFO {}\r\nMSG k 1 5\r\n1:0:0\r\nPING\r\nMSG k 1 7\r\n2:0:1\r\n\r\n+OK\r\n".utf8)
        for step in 1...wire.count {
            var reader = NATSReader()
            var seen: [String] = []
            var start = 0
            while start < wire.count {
                let piece = Array(wire[start..<min(start + step, wire.count)])
                let failure = piece.withUnsafeBytes { chunk in
                    reader.feed(chunk) { event, bytes in
                        switch event {
                        case .message(_, let sid, let payload):
                            seen.append("\(sid):" + String(decoding: UnsafeBufferPointer(rebasing: bytes[payload]), as: UTF8.self))
                        default: seen.append("\(event)".prefix(4).description)
                        }
                    }
                }
                #expect(failure == nil)
                start += step
            }
            #expect(seen == ["info", "1:1:0:0", "ping", "1:2:0:1\r\n", "ok"], "step \(step)")
        }
        var reader = NATSReader()
        let failure = Array("PING\r\nNOPE\r\n".utf8).withUnsafeBytes { reader.feed($0) { _, _ in } }
        #expect(failure != nil)
    }

    @Test func commandsOnTheWire() {
        var bytes: [UInt8] = []
        NATSCommand.appendConnect(verbose: true, to: &bytes)
        NATSCommand.appendSubscribe(subject: "k", sid: 3, to: &bytes)
        NATSCommand.appendPublish(subjectAndSpace: Array("k ".utf8), payload: Array("1:2:3".utf8), to: &bytes)
        NATSCommand.appendPing(to: &bytes)
        NATSCommand.appendPong(to: &bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("CONNECT {\"verbose\":true,\"pedantic\":false,"))
        #expect(text.hasSuffix("\"}\r\nSUB k 3\r\nPUB k 5\r\n1:2:3\r\nPING\r\nPONG\r\n"))
    }

    @Test func payloadRoundTrip() {
        var bytes: [UInt8] = []
        let payload = PeerPayload(sentAt: 123_456_789_012, publisher: 15, counter: 7)
        payload.append(to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "123456789012:15:7")
        #expect(PeerPayload.parse(bytes) == payload)
        for bad in ["", "1:2", "1:2:3:4", "1::3", ":1:2", "1:2:", "1:x:3", "99999999999999999999:1:1", "1:2:3 "] {
            #expect(PeerPayload.parse(Array(bad.utf8)) == nil, "\(bad.debugDescription)")
        }
    }
}

// How a subscription's notifications are assembled (Subscription.swift): the path as the client spelled it (in process,
// InProcessServer.swift), the id's packed digits, and the connection's OutputBuffer underneath.
@testable import KVOServer
import Testing
import WireProtocol

@MainActor
@Suite struct SubscriptionDeliveryTests {
    @Test func aPathKeepsTheClientsSpellingInNotificationsAndObservers() throws {
        let server = InProcessServer()
        let peer = server.peer()
        #expect(try peer.request(1, "set", #"{"path":"p","value":{"name":"a"}}"#)["result"] != nil)
        // `$01.name` parses to the same path as `$1.name`; each subscription still says what its client wrote.
        let spelled = try peer.request(2, "subscribe", #"{"path":"$01.name"}"#)["result"]?["subscription"]
        let canonical = try peer.request(3, "subscribe", #"{"path":"$1.name","context":"c"}"#)["result"]?["subscription"]
        peer.send(Peer.requestText(4, "set", #"{"path":"p.name","value":"b"}"#))
        let messages = try peer.receive(3)
        #expect(messages[0]["params"]?["subscription"] == canonical)
        #expect(messages[0]["params"]?["path"] == "$1.name")
        #expect(messages[0]["params"]?["context"] == "c")
        #expect(messages[1]["params"]?["subscription"] == spelled)
        #expect(messages[1]["params"]?["path"] == "$01.name")
        #expect(messages[2]["id"] == 4)
        let listed = try peer.request(5, "observers")["result"]?["connections"]?.arrayValue?.first?["subscriptions"]?.arrayValue ?? []
        #expect(listed.map { $0["path"] } == ["$01.name", "$1.name"])
    }

    @Test func outputBufferAppendsPackedDigitsDecimalsAndRuns() {
        var buffer = OutputBuffer()
        let startsEmpty = buffer.isEmpty
        #expect(startsEmpty)
        buffer.append(#"{"subscription":"#)
        // "1234" packed little-endian: the first digit in the low byte; the store writes 8 bytes, the count says 4.
        buffer.append(packed: 0x3433_3231, count: 4)
        buffer.append(Array(",".utf8))
        buffer.appendInteger(123_456_789_012)
        let big = [UInt8](repeating: UInt8(ascii: "x"), count: 5000)  // past the first capacity: the buffer grows
        buffer.append(big)
        let text = buffer.withBytes { String(decoding: $0, as: UTF8.self) }
        #expect(text == #"{"subscription":1234,123456789012"# + String(repeating: "x", count: 5000))
        buffer.removeAll(keepingCapacity: true)
        let (emptied, kept) = (buffer.isEmpty, buffer.capacity)
        #expect(emptied && kept >= 5000)
        buffer.removeAll()
        let released = buffer.capacity
        #expect(released == 0)
        buffer.appendInteger(0)
        let zero = buffer.withBytes { Array($0) }
        #expect(zero == [UInt8(ascii: "0")])
    }

    @Test func aNotificationsFourRunsGoInBehindOneCapacityCheck() {
        var buffer = OutputBuffer()
        let middle = SharedBytes(Array(#","path":"p","#.utf8))
        let tail = Array(#""kind":"setting","new":1,"seq":2}}"#.utf8) + [UInt8(ascii: "\n")]
        tail.withUnsafeBytes { tail in
            // A packed id, then one too long to pack (formatted), then enough to make the buffer grow.
            buffer.appendNotification(
                head: #"{"head":"#, idDigits: 0x3433_3231, idDigitCount: 4, id: 1234, middle: middle.bytes, tail: tail)
            buffer.appendNotification(
                head: #"{"head":"#, idDigits: 0, idDigitCount: 0, id: 123_456_789_012, middle: middle.bytes, tail: tail)
            for _ in 0..<100 {
                buffer.appendNotification(
                    head: #"{"head":"#, idDigits: 0x37, idDigitCount: 1, id: 7, middle: middle.bytes, tail: tail)
            }
        }
        let lines = buffer.withBytes { String(decoding: $0, as: UTF8.self) }.split(separator: "\n")
        #expect(lines.count == 102)
        #expect(lines[0] == #"{"head":1234,"path":"p","kind":"setting","new":1,"seq":2}}"#)
        #expect(lines[1] == #"{"head":123456789012,"path":"p","kind":"setting","new":1,"seq":2}}"#)
        #expect(lines.dropFirst(2).allSatisfy { $0 == #"{"head":7,"path":"p","kind":"setting","new":1,"seq":2}}"# })
    }

    @Test func subscriptionsOfOnePathWithDifferentOptionsEachGetTheirShapeOfEveryChange() throws {
        let server = InProcessServer()
        let watcher = server.peer()
        let setter = server.peer()
        // Shapes alternate along the path's subscribers, so the encoder's last tail changes between neighbours.
        let optionSets = [#"["new"]"#, #"["old"]"#, #"["new","old"]"#, #"["new"]"#, #"[]"#, #"["new"]"#]
        for (index, options) in optionSets.enumerated() {
            _ = try watcher.request(index + 1, "subscribe", #"{"path":"v","options":\#(options)}"#)
        }
        for value in 1...3 {
            _ = try setter.request(value, "set", #"{"path":"v","value":\#(value)}"#)
            // After notifications go out last subscriber first.
            let messages = try watcher.receive(optionSets.count).reversed().map { $0["params"] }
            let old: JSONValue = value == 1 ? .null : .int(Int64(value - 1))
            let new = JSONValue.int(Int64(value))
            #expect(messages.map { $0?["new"] } == [new, nil, new, new, nil, new])
            #expect(messages.map { $0?["old"] } == [nil, old, old, nil, nil, nil])
            #expect(messages.allSatisfy { $0?["seq"] == .int(Int64(value)) })
        }
        try watcher.expectQuiet()
    }

    @Test func subscribersOfOnePathGetTheirOwnMiddleWhateverTheirNeighbours() throws {
        let server = InProcessServer()
        let watcher = server.peer()
        let other = server.peer()
        let setter = server.peer()
        // Runs of subscribers sharing the path's middle, broken by ones with a context of their own (another
        // middle), on two connections: each notification has its own subscription's id, middle and the change's tail.
        let contexts: [String?] = [nil, nil, nil, "c1", nil, nil, "c2", "c2", nil, nil, nil]
        var expected: [(id: JSONValue?, context: JSONValue?)] = []
        for (index, context) in contexts.enumerated() {
            let params = context.map { #"{"path":"w","options":["new"],"context":"\#($0)"}"# } ?? #"{"path":"w","options":["new"]}"#
            let peer = index % 4 == 3 ? other : watcher
            let id = try peer.request(index + 1, "subscribe", params)["result"]?["subscription"]
            if peer === watcher { expected.append((id, context.map { .string($0) })) }
        }
        for value in 1...3 {
            _ = try setter.request(value, "set", #"{"path":"w","value":\#(value)}"#)
            let messages = try watcher.receive(expected.count).reversed().map { $0["params"] }
            #expect(messages.map { $0?["subscription"] } == expected.map(\.id))
            #expect(messages.map { $0?["context"] } == expected.map(\.context))
            #expect(messages.allSatisfy { $0?["path"] == "w" && $0?["new"] == .int(Int64(value)) })
            #expect(messages.allSatisfy { $0?["seq"] == .int(Int64(value)) && $0?["kind"] == "setting" })
            #expect(try other.receive(contexts.count - expected.count).allSatisfy { $0["params"]?["new"] == .int(Int64(value)) })
        }
        try watcher.expectQuiet()
        try other.expectQuiet()
    }
}

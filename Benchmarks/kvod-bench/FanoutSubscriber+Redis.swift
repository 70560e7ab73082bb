// The Redis half of a fan-out subscriber (FanoutSubscriber.swift): a fast path for the pushed message
// `*3 $7 message $N channel $N payload` matched byte for byte, and the full RESP parse for anything else (the
// subscribe confirmation first of all). PUBLISH payloads are `TIME:PUBLISHER:COUNTER`; keyspace events carry no
// value, so their latency is matched in order with the SETs sent.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension FanoutSubscriber {
    /// Handles every complete reply in `start[0..<count]`; returns how many bytes that consumed.
    func scanRedis(
        _ start: UnsafePointer<UInt8>, _ count: Int, now: UInt64, latencies: UnsafeMutableBufferPointer<UInt64>,
        latencyCount: inout Int
    ) -> Int {
        let bytes = UnsafeBufferPointer(start: start, count: count)
        let isKeyspace = self.target == .redis(.set)
        let sendTimes = isKeyspace ? self.run.sendTimes : []
        var received = self.receivedCount
        var counters: [Int64] = []
        swap(&counters, &self.nextCounters)
        var position = 0
        var items: [RESPItem] = []
        self.redisPrefix.withUnsafeBufferPointer { prefix in
            while position < count {
                let messageStart = position
                if self.isSubscribed, count - position > prefix.count,
                    memcmp(start + position, prefix.baseAddress!, prefix.count) == 0
                {
                    // *3 $7 message $N channel $N payload: the channel is skipped, the payload checked.
                    var cursor = position + prefix.count
                    guard let channelLength = Self.length(bytes, &cursor) else { break }
                    cursor += channelLength + 2
                    guard cursor < count else { break }
                    guard start[cursor] == UInt8(ascii: "$") else { return self.run.fail("bad RESP message") }
                    cursor += 1
                    guard let payloadLength = Self.length(bytes, &cursor) else { break }
                    let payloadStart = cursor
                    cursor += payloadLength + 2
                    guard cursor <= count else { break }
                    position = cursor
                    received += 1
                    if isKeyspace {
                        // In-order matching: the i-th notification belongs to the i-th SET sent.
                        if payloadLength != 3 || start[payloadStart] != UInt8(ascii: "s") {
                            self.run.report("subscriber \(self.index): an unexpected keyspace event")
                        }
                        if received - 1 < sendTimes.count {
                            let sent = sendTimes[received - 1]
                            latencies[latencyCount] = now >= sent ? now - sent : 0
                            latencyCount += 1
                        }
                    } else if let sent = self.checkPublished(
                        start + payloadStart, payloadLength, counters: &counters)
                    {
                        latencies[latencyCount] = now >= sent ? now - sent : 0
                        latencyCount += 1
                    }
                    continue
                }
                items.removeAll(keepingCapacity: true)
                switch RESPReader.parse(bytes, at: &position, into: &items, depth: 0) {
                case .complete:
                    // The slow path works on the stored state.
                    self.receivedCount = received
                    swap(&counters, &self.nextCounters)
                    self.handleRedis(items, bytes, now: now)
                    swap(&counters, &self.nextCounters)
                    received = self.receivedCount
                case .incomplete:
                    position = messageStart
                    return
                case .invalid(let reason):
                    return self.run.fail("subscriber \(self.index): \(reason)")
                }
            }
        }
        self.receivedCount = received
        swap(&counters, &self.nextCounters)
        return position
    }

    /// A RESP length `DIGITS\r\n` at `cursor`, which it advances past the CRLF; nil when incomplete.
    @inline(__always)
    private static func length(_ bytes: UnsafeBufferPointer<UInt8>, _ cursor: inout Int) -> Int? {
        var value = 0
        var position = cursor
        while position < bytes.count {
            let digit = bytes[position] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            value = value &* 10 &+ Int(digit)
            position += 1
        }
        guard position + 1 < bytes.count, position > cursor else { return nil }
        cursor = position + 2
        return value
    }

    /// Checks a PUBLISH payload `TIME:PUBLISHER:COUNTER` against the counters; returns its send time.
    @inline(__always)
    private func checkPublished(
        _ payload: UnsafePointer<UInt8>, _ length: Int, counters: inout [Int64]
    ) -> UInt64? {
        var fields: (UInt64, Int) = (0, 0)
        var field = 0
        var value: UInt64 = 0
        for offset in 0..<length {
            let byte = payload[offset]
            if byte == UInt8(ascii: ":") {
                if field == 0 { fields.0 = value } else { fields.1 = Int(value) }
                field += 1
                value = 0
            } else {
                value = value &* 10 &+ UInt64(byte &- UInt8(ascii: "0"))
            }
        }
        guard field == 2, fields.1 < counters.count else {
            self.run.report("subscriber \(self.index): a malformed PUBLISH payload")
            return nil
        }
        let counter = Int64(value)
        if counter != counters[fields.1] {
            self.run.report(
                "subscriber \(self.index): publisher \(fields.1) message \(counter), "
                    + "expected \(counters[fields.1])")
        }
        counters[fields.1] = counter + 1
        return fields.0
    }

    /// The slow path: one whole reply (the subscribe confirmation, or a message the fast path did not take).
    private func handleRedis(_ items: [RESPItem], _ bytes: UnsafeBufferPointer<UInt8>, now: UInt64) {
        guard items.count == 4, items[0].kind == .array, items[0].integer == 3, items[1].kind == .bulk else {
            return self.run.fail(
                "subscriber \(self.index): unexpected reply "
                    + (items.first.map { RESPReader.text($0, in: bytes) } ?? ""))
        }
        if RESPReader.item(items[1], in: bytes, equals: "message") {
            guard self.isSubscribed else {
                return self.run.report("subscriber \(self.index): a message before the subscribe confirmation")
            }
            self.receivedCount += 1
            let payload = items[3]
            if self.target == .redis(.set) {
                if !RESPReader.item(payload, in: bytes, equals: "set") {
                    self.run.report("subscriber \(self.index): keyspace event \(RESPReader.text(payload, in: bytes))")
                }
                let sent = self.run.sendTime(ofMutation: self.receivedCount - 1)
                self.run.didNotify(latency: sent.map { now >= $0 ? now - $0 : 0 })
            } else {
                let sent = bytes.baseAddress.flatMap { base in
                    self.checkPublished(base + payload.start, payload.count, counters: &self.nextCounters)
                }
                self.run.didNotify(latency: sent.map { now >= $0 ? now - $0 : 0 })
            }
        } else if RESPReader.item(items[1], in: bytes, equals: "subscribe") {
            self.isSubscribed = true
            self.nextCounters = Array(repeating: 0, count: self.run.configuration.publishers)
            self.run.subscriberDidSubscribe(seq: nil)
        } else {
            self.run.fail("subscriber \(self.index): unexpected push \(RESPReader.text(items[1], in: bytes))")
        }
    }
}

// The NATS and etcd halves of a fan-out subscriber (FanoutSubscriber.swift). NATS: `MSG` framing parsed in place
// (PeerProtocols' NATSParser), the subscription acknowledged by the PONG after the SUB, the server's keep-alive PING
// answered. etcd: the watch response's chunked HTTP stream, one JSON message per line, its events checked by
// mod_revision (one more than the last) and by each publisher's counter. Both payloads are `TIME:PUBLISHER:COUNTER`.

import PeerProtocols

extension FanoutSubscriber {
    /// Handles every complete NATS message in `start[0..<count]`; returns how many bytes that consumed.
    func scanNATS(
        _ start: UnsafePointer<UInt8>, _ count: Int, now: UInt64, latencies: UnsafeMutableBufferPointer<UInt64>,
        latencyCount: inout Int
    ) -> Int {
        let bytes = UnsafeBufferPointer(start: start, count: count)
        var position = 0
        while position < count {
            switch NATSParser.parse(bytes, at: position) {
            case .complete(let event, let next):
                position = next
                switch event {
                case .message(_, _, let payload):
                    guard self.isSubscribed else {
                        self.run.report("subscriber \(self.index): a message before the subscription's PONG")
                        continue
                    }
                    self.receivedCount += 1
                    if let sent = self.checkPeerPayload(UnsafeBufferPointer(rebasing: bytes[payload])) {
                        latencies[latencyCount] = now >= sent ? now - sent : 0
                        latencyCount += 1
                    }
                case .pong:
                    guard !self.isSubscribed else { continue }
                    self.isSubscribed = true
                    self.nextCounters = Array(repeating: 0, count: self.run.configuration.publishers)
                    self.run.subscriberDidSubscribe(seq: nil)
                case .ping:
                    self.connection?.send { NATSCommand.appendPong(to: &$0) }
                case .info, .ok:
                    continue
                case .error(let text):
                    self.run.fail("subscriber \(self.index): -ERR \(text)")
                    return count
                }
            case .incomplete:
                return position
            case .invalid(let reason):
                self.run.fail("subscriber \(self.index): \(reason)")
                return count
            }
        }
        return position
    }

    /// Feeds `start[0..<count]` to the watch's HTTP stream (which keeps what is incomplete); consumes it all.
    func scanEtcd(
        _ start: UnsafePointer<UInt8>, _ count: Int, now: UInt64, latencies: UnsafeMutableBufferPointer<UInt64>,
        latencyCount: inout Int
    ) -> Int {
        var status = 200
        let failure = self.etcdReader.feed(UnsafeRawBufferPointer(start: start, count: count)) { event in
            switch event {
            case .head(let code): status = code
            case .body(let body):
                guard status == 200 else { return }
                for byte in body {
                    guard byte == 0x0A else {
                        self.etcdLine.append(byte)
                        continue
                    }
                    self.handleEtcdLine(now: now, latencies: latencies, latencyCount: &latencyCount)
                    self.etcdLine.removeAll(keepingCapacity: true)
                }
            case .end:
                self.run.fail("subscriber \(self.index): the watch response ended (status \(status))")
            }
        }
        if let failure { self.run.fail("subscriber \(self.index): \(failure)") }
        if status != 200 { self.run.fail("subscriber \(self.index): the watch answered HTTP \(status)") }
        return count
    }

    private func handleEtcdLine(now: UInt64, latencies: UnsafeMutableBufferPointer<UInt64>, latencyCount: inout Int) {
        let message: EtcdWatchMessage
        do throws(EtcdWatchError) {
            message = try EtcdWatchMessage.parse(self.etcdLine)
        } catch {
            return self.run.fail("subscriber \(self.index): \(error)")
        }
        switch message {
        case .created(_, let revision):
            guard !self.isSubscribed else { return self.run.report("subscriber \(self.index): a second watch") }
            self.isSubscribed = true
            self.etcdRevision = revision
            self.nextCounters = Array(repeating: 0, count: self.run.configuration.publishers)
            self.run.subscriberDidSubscribe(seq: nil)
        case .events(_, let events):
            guard self.isSubscribed else {
                return self.run.report("subscriber \(self.index): events before the watch was created")
            }
            for event in events {
                if self.receivedCount > 0 && event.modRevision != self.etcdRevision + 1 {
                    self.run.report(
                        "subscriber \(self.index): mod_revision \(event.modRevision), expected \(self.etcdRevision + 1)")
                } else if event.modRevision <= self.etcdRevision {
                    self.run.report("subscriber \(self.index): an event older than the watch")
                }
                self.etcdRevision = event.modRevision
                self.receivedCount += 1
                if event.isDelete { self.run.report("subscriber \(self.index): a delete") }
                let sent = event.value.withUnsafeBufferPointer { self.checkPeerPayload($0) }
                if let sent {
                    // The temporary buffer holds one latency per 16 bytes read; an event takes over 100.
                    if latencyCount < latencies.count {
                        latencies[latencyCount] = now >= sent ? now - sent : 0
                        latencyCount += 1
                    } else {
                        self.run.didNotify(latency: now >= sent ? now - sent : 0)
                    }
                }
            }
        case .progress:
            return
        case .canceled(let reason):
            self.run.fail("subscriber \(self.index): the watch was canceled: \(reason)")
        case .error(let text):
            self.run.fail("subscriber \(self.index): gateway error \(text)")
        }
    }

    /// Checks a `TIME:PUBLISHER:COUNTER` payload against the counters; returns its send time.
    private func checkPeerPayload(_ payload: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard let parsed = PeerPayload.parse(payload), parsed.publisher < self.nextCounters.count else {
            self.run.report("subscriber \(self.index): a malformed payload")
            return nil
        }
        let expected = self.nextCounters[parsed.publisher]
        if parsed.counter != expected {
            self.run.report(
                "subscriber \(self.index): publisher \(parsed.publisher) message \(parsed.counter), expected \(expected)")
        }
        self.nextCounters[parsed.publisher] = parsed.counter + 1
        return parsed.sentAt
    }
}

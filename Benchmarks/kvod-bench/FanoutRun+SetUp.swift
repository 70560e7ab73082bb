// Setting up a fan-out run (FanoutRun.swift): for Redis SET mode a control connection that turns keyspace
// notifications on, then the subscribers, each subscribed before any publisher connects, then the publishers.

import UVLoop

extension FanoutRun {
    /// Redis SET mode: turns keyspace notifications for string commands on, then connects the subscribers.
    func configureKeyspaceNotifications() {
        let dialer = Dialer(
            loop: self.loop, host: self.configuration.host, port: self.configuration.port, count: 1,
            onConnected: { [self] _, stream in
                var reader = RESPReader()
                do {
                    let connection = try BenchConnection(
                        stream: stream, batcher: self.batcher, tls: self.configuration.tls,
                        onBytes: { [self] chunk in
                            let failure = reader.feed(chunk) { items, bytes in
                                if items.first?.kind == .simple {
                                    self.connectSubscribers()
                                } else {
                                    self.fail(
                                        "CONFIG SET notify-keyspace-events failed: "
                                            + (items.first.map { RESPReader.text($0, in: bytes) } ?? "?"))
                                }
                            }
                            if let failure { self.fail("control connection: \(failure)") }
                        },
                        onEnd: { [self] reason in self.connectionEnded("control connection", reason) })
                    self.control = connection
                    connection.send { RESPCommand.append(["CONFIG", "SET", "notify-keyspace-events", "K$"], to: &$0) }
                } catch {
                    self.fail("control connection: \(error)")
                }
            },
            onFailure: { [self] message in self.fail(message) })
        dialer.start()
    }

    /// Connects the subscribers; each subscribes as soon as it is connected.
    func connectSubscribers() {
        // Paced: a connect slot is freed when that subscriber's subscribe is acknowledged.
        let dialer = Dialer(
            loop: self.loop, host: self.configuration.host, port: self.configuration.port,
            count: self.configuration.subscribers, isPaced: true,
            onConnected: { [self] index, stream in
                let subscriber = FanoutSubscriber(index: index, run: self)
                self.subscribers.append(subscriber)
                do {
                    try subscriber.attach(stream, batcher: self.batcher)
                } catch {
                    self.fail("subscriber \(index): \(error)")
                }
            },
            onFailure: { [self] message in self.fail(message) })
        self.subscriberDialer = dialer
        dialer.start()
    }

    /// A subscriber's subscribe was acknowledged; `seq` is kvod's reported seq (nil for Redis).
    func subscriberDidSubscribe(seq: Int64?) {
        if let seq {
            if let expected = self.subscribeSeq, expected != seq {
                self.report(
                    "subscribe responses disagree on the seq (\(expected) and \(seq)): "
                        + "is another client mutating the server?")
            }
            self.subscribeSeq = seq
        }
        self.subscribedCount += 1
        self.subscriberDialer?.release()
        if self.subscribedCount == self.configuration.subscribers { self.connectPublishers() }
    }

    /// The seq the first mutation must carry, when known.
    var firstExpectedSeq: Int64? { self.subscribeSeq.map { $0 + 1 } }

    private func connectPublishers() {
        let dialer = Dialer(
            loop: self.loop, host: self.configuration.host, port: self.configuration.port,
            count: self.configuration.publishers,
            onConnected: { [self] index, stream in
                let publisher = FanoutPublisher(index: index, run: self)
                self.publishers.append(publisher)
                do {
                    try publisher.attach(stream, batcher: self.batcher)
                } catch {
                    self.fail("publisher \(index): \(error)")
                    return
                }
                if self.publishers.count == self.configuration.publishers { self.startPublishing() }
            },
            onFailure: { [self] message in self.fail(message) })
        dialer.start()
    }
}

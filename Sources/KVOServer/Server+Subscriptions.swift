// Subscription bookkeeping that spans connections: ending a subscription everywhere it is known (the engine, the
// history, the progress list), and `progress` notifications for quiet subscriptions (Protocol/README.md#resuming).
import ObjectGraph
import UVLoop
import WireProtocol

extension Server {
    /// Removes a subscription from the engine, the history and the progress list (the connection already forgot it).
    func subscriptionEnded(_ subscription: Subscription) {
        guard let observer = subscription.observer else { return }
        self.history.unsubscribed(observer.keyPath)
        try? self.graph.removeObservation(observer)  // the engine has it: both sides are added together
        subscription.observer = nil
        if self.progressSubscriptions.removeValue(forKey: subscription.id) != nil && self.progressSubscriptions.isEmpty {
            self.progressTimer?.close()
            self.progressTimer = nil
        }
    }

    /// Starts `progress` notifications for a subscription: `{"method":"progress","params":{"subscription":ID,"seq":N}}`
    /// whenever it has sent nothing for its interval.
    func startProgress(_ subscription: Subscription, seconds: Int) throws(UVError) {
        subscription.startProgress(milliseconds: UInt64(seconds) * 1000, now: self.loop.nowMilliseconds)
        self.progressSubscriptions[subscription.id] = subscription
        guard self.progressTimer == nil else { return }
        let timer = try LoopTimer(loop: self.loop)
        try timer.start(afterMilliseconds: 250, repeatMilliseconds: 250) { [unowned self] in self.sendProgress() }
        self.progressTimer = timer
    }

    private func sendProgress() {
        let now = self.loop.nowMilliseconds
        let seq = self.graph.seq
        for subscription in self.progressSubscriptions.values {
            guard let extras = subscription.extras, now - extras.lastSentMilliseconds >= extras.progressMilliseconds else {
                continue
            }
            extras.lastSentMilliseconds = now
            subscription.connection.enqueue { buffer in
                RPCEncoder.appendNotification(method: "progress", to: &buffer) {
                    $0.append(contentsOf: #"{"subscription":"#.utf8)
                    JSONWriter.appendInt(Int64(subscription.id), to: &$0)
                    $0.append(contentsOf: #","seq":"#.utf8)
                    JSONWriter.appendInt(Int64(seq), to: &$0)
                    $0.append(UInt8(ascii: "}"))
                }
                buffer.append(UInt8(ascii: "\n"))
            }
        }
    }
}

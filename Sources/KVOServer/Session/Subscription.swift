// One client subscription: the engine's sink for its observation, and the pieces of its notifications that are
// fixed at subscribe time (the id's packed digits, the shared `,"path":"P",` middle). NotificationEncoder.swift
// writes the notifications; Subscriptions.swift owns the subscription's life.
import ObjectGraph
import ValueCoding
import WireProtocol

/// A subscription of one connection. Loop-owned. It is the engine's sink for its observation: the engine calls
/// `observe` inside the change. Kept small (fields a subscription rarely has live in `Extras`): a server holds
/// hundreds of thousands.
@MainActor
final class Subscription {
    /// The subscription id on the wire (unique in the server, increasing).
    let id: Int
    /// The engine observation behind it: set right after it is added, nil once the subscription ended (the
    /// observer holds the subscription as its sink, so this reference is dropped then to break the cycle).
    var observer: Observer?
    /// For a query subscription, the engine's live query subscriber instead (set and cleared like `observer`).
    var queryObserver: QueryObserver?
    /// The session. A strong `let`, which a notification reads without a retain and release (an unowned one costs
    /// both per notification); the session holds its subscriptions too, and drops them when it closes.
    let session: Session
    let options: ObservationOptions
    /// How many digits `idDigits` holds: the id's, when it has at most 8; 0 for a longer id (formatted per
    /// notification).
    let idDigitCount: UInt8
    /// Whether the subscription sends `progress` notifications (its extras say when it last sent something).
    private(set) var sendsProgress = false
    /// The id's decimal digits packed little-endian (the first digit in the low byte).
    let idDigits: UInt64
    /// `,"path":"P",` (and `"context":C,`): shared by the subscriptions of one path without context.
    let middle: SharedBytes
    /// What few subscriptions have: a context, `progress` notifications.
    private(set) var extras: Extras?

    final class Extras {
        /// The key path as the client gave it, when that is not how `keyPath` prints (`$042.x`).
        var spelling: String?
        var context: JSONValue?
        /// With the `progress` param: how long the subscription may stay quiet before a `progress` notification.
        var progressMilliseconds: UInt64 = 0
        /// When the subscription last sent something (loop time).
        var lastSentMilliseconds: UInt64 = 0
    }

    init(
        id: Int, path: String, keyPath: KeyPath, options: ObservationOptions, context: JSONValue?, session: Session,
        middle: SharedBytes
    ) {
        self.id = id
        self.options = options
        self.session = session
        if id >= 0 && id < 100_000_000 {
            var digits: [UInt8] = []
            JSONWriter.appendInt(Int64(id), to: &digits)
            self.idDigitCount = UInt8(digits.count)
            self.idDigits = digits.reversed().reduce(0) { $0 << 8 | UInt64($1) }
        } else {
            self.idDigitCount = 0
            self.idDigits = 0
        }
        self.middle = middle
        let spelledAsParsed = path == keyPath.description
        if context != nil || !spelledAsParsed {
            let extras = Extras()
            extras.context = context
            extras.spelling = spelledAsParsed ? nil : path
            self.extras = extras
        }
    }

    /// True until the subscription ended.
    var isLive: Bool { self.observer != nil || self.queryObserver != nil }
    /// The parsed path (while live).
    var keyPath: KeyPath { self.observer?.keyPath ?? self.queryObserver!.keyPath }
    /// The key path as the client gave it (while live).
    var path: String { self.extras?.spelling ?? self.keyPath.description }
    var context: JSONValue? { self.extras?.context }

    /// Starts `progress` bookkeeping (Subscriptions.swift).
    func startProgress(milliseconds: UInt64, now: UInt64) {
        let extras = self.extras ?? Extras()
        extras.progressMilliseconds = milliseconds
        extras.lastSentMilliseconds = now
        self.extras = extras
        self.sendsProgress = milliseconds > 0
    }

    /// Appends this subscription's notification of `change` to its session's output.
    @inline(__always)
    private func deliver(_ change: Change, options: ObservationOptions) {
        if self.sendsProgress, let extras = self.extras {
            extras.lastSentMilliseconds = self.session.context.clock.nowMilliseconds
        }
        self.session.enqueueNotification(of: self, change: change, options: options)
    }

    /// Queues a notification outside a change (initial, replayed): `change` shaped for this subscription.
    func deliver(_ change: Change) {
        self.deliver(change, options: self.options)
    }
}

extension Subscription: @MainActor ObservationSink {
    func observe(_ change: Change, options: ObservationOptions) {
        self.deliver(change, options: options)
    }
}

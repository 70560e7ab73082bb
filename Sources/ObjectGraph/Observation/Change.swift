// What an observer is told: the KVO change dictionary as a value type, and the options that shape it.

/// What an observation asks to be told (NSKeyValueObservingOptions).
public struct ObservationOptions: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Notifications carry the value after the change.
    public static let new = ObservationOptions(rawValue: 1)
    /// Notifications carry the value before the change.
    public static let old = ObservationOptions(rawValue: 2)
    /// One notification with the current value when the observation is added.
    public static let initial = ObservationOptions(rawValue: 4)
    /// A notification before each change as well as after it.
    public static let prior = ObservationOptions(rawValue: 8)
}

/// An observation's identity. Ids increase, so they also give subscription order.
public typealias ObservationID = Int

/// The kind of a change (NSKeyValueChange).
public enum ChangeKind: String, Sendable {
    case setting, insertion, removal, replacement
}

/// One notification: the KVO change dictionary. Fields are present only as the observation's options asked.
public struct Change: Sendable {
    /// The observation being notified.
    public var observation: ObservationID
    public var kind: ChangeKind
    /// True for the notification sent before the change (the `prior` option); it never carries `new`.
    public var isPrior: Bool
    /// True for the notification sent when the observation was added (the `initial` option).
    public var isInitial: Bool
    /// The value after the change, with the `new` option (objects as snapshots; a missing value is null).
    public var new: Value?
    /// The value before the change, with the `old` option; never on an initial notification.
    public var old: Value?
    /// The indexes of a to-many change, sorted.
    public var indexes: [Int]?
    /// The seq of the mutation (for an initial notification, the state the value was read from).
    public var seq: UInt64
    /// Equal for notifications whose `new`/`old` values are the same, so an encoder may encode them once.
    public var payloadID: UInt64
    /// A query subscription's: the number of elements its predicate matches at `seq` (LiveQuery.swift).
    public var count: Int? = nil
}

extension Change {
    /// A change as recorded elsewhere (the subscription history's log): an after notification of `kind` at `seq`.
    public init(kind: ChangeKind, seq: UInt64, new: Value?, old: Value?, indexes: [Int]?) {
        self.init(
            observation: 0, kind: kind, isPrior: false, isInitial: false, new: new, old: old, indexes: indexes,
            seq: seq, payloadID: 0)
    }

    /// Which fields the change carries, as bits: 1 `new`, 2 `old`, 4 `prior`, 8 `initial`. (A cheap test for
    /// encoders: comparing the optional values with nil outside this module copies them.)
    public var fieldBits: UInt8 {
        var bits: UInt8 = 0
        if case .some = self.new { bits |= 1 }
        if case .some = self.old { bits |= 2 }
        if self.isPrior { bits |= 4 }
        if self.isInitial { bits |= 8 }
        return bits
    }

    /// The change as an observation with `options` sees it: without `new` or `old` unless it asked for them.
    public func shaped(for options: ObservationOptions) -> Change {
        var shaped = self
        if !options.contains(.new) { shaped.new = nil }
        if !options.contains(.old) { shaped.old = nil }
        return shaped
    }
}

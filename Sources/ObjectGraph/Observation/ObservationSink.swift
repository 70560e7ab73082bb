// Who receives an observation's notifications. A server makes its subscriptions sinks (no closure, no per-observer
// copy of the change); the Swift API's closures are wrapped in a `ClosureSink`.

/// Receives the notifications of the observations it was added with, synchronously, inside the change.
public protocol ObservationSink: AnyObject {
    /// One notification. `change` is shared by every observer of the path: it carries `new` and `old` when any of
    /// them asked, and `observation` is 0. `change.shaped(for: options)` is exactly what this observation asked for.
    func observe(_ change: Change, options: ObservationOptions)
}

/// A closure observer: gets each change shaped for its options, with its own observation id.
final class ClosureSink: ObservationSink {
    private let handler: (Change) -> Void
    var id: ObservationID = 0

    init(_ handler: @escaping (Change) -> Void) {
        self.handler = handler
    }

    func observe(_ change: Change, options: ObservationOptions) {
        var shaped = change.shaped(for: options)
        shaped.observation = self.id
        self.handler(shaped)
    }
}

// LoopTimer: a uv_timer handle that runs a callback once after a delay, or repeatedly, measured on the loop's clock.

internal import CLibUV

/// Loop-owned. A one-shot or repeating timer on the loop's clock (`uv_timer`). An active timer keeps the loop alive.
@MainActor
public final class LoopTimer: LoopHandleOwner {
    let loop: EventLoop
    /// The timer handle; nonisolated(unsafe) only so deinit can free it, every other use is on the main actor.
    nonisolated(unsafe) let handle: UnsafeMutablePointer<uv_timer_t>
    private var callback: (@MainActor () -> Void)?
    var isClosing = false

    /// Creates a stopped timer on `loop`.
    public init(loop: EventLoop) throws(UVError) {
        let handle = try openHandle(uv_timer_t(), on: loop, "uv_timer_init") { uv_timer_init($0, $1) }
        self.loop = loop
        self.handle = handle
        retainThroughData(handle, owner: self)
    }

    deinit {
        // Runs only after the close callback dropped the retain taken in init.
        self.handle.deallocate()
    }

    var uvHandle: UnsafeMutablePointer<uv_handle_t> { asHandle(self.handle) }

    /// (Re)starts the timer: `callback` runs `afterMilliseconds` from the loop's current time, then every
    /// `repeatMilliseconds` if that is not 0. Replaces an earlier callback. Throws after `close()`.
    public func start(
        afterMilliseconds: UInt64, repeatMilliseconds: UInt64 = 0, _ callback: @escaping @MainActor () -> Void
    ) throws(UVError) {
        guard !self.isClosing else { throw UVError.closed("uv_timer_start") }
        try uvCheck(uv_timer_start(self.handle, onTimerFired, afterMilliseconds, repeatMilliseconds), "uv_timer_start")
        self.callback = callback
    }

    /// Stops the timer; `start` may be called again.
    public func stop() {
        guard !self.isClosing else { return }
        uvAssert(uv_timer_stop(self.handle), "uv_timer_stop")
    }

    /// Stops the timer and starts closing it; idempotent. The callback is not called again.
    public func close() {
        self.closeHandle()
    }

    func didClose() {
        self.callback = nil
    }

    fileprivate func fire() {
        guard !self.isClosing else { return }
        self.callback?()
    }
}

private let onTimerFired: uv_timer_cb = { handle in
    guard let handle = handle.map(asHandle), let timer = owner(of: handle, as: LoopTimer.self) else { return }
    enterLoop(handle, timer, ()) { timer, _ in timer.fire() }
}

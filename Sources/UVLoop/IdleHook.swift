// IdleHook: a uv_idle handle that runs a callback once per loop iteration while started, and while started makes the
// loop poll without blocking. kvod starts it when a connection yielded the rest of its input to the next turn, so
// that its work goes on at once while every other connection is still served in between.

internal import CLibUV

/// Loop-owned. Runs a callback once per loop iteration, before the loop polls, while started (`uv_idle`); an
/// active idle handle makes libuv poll with a zero timeout. A started hook keeps the loop alive.
@MainActor
public final class IdleHook: LoopHandleOwner {
    let loop: EventLoop
    /// The idle handle; nonisolated(unsafe) only so deinit can free it, every other use is on the main actor.
    nonisolated(unsafe) let handle: UnsafeMutablePointer<uv_idle_t>
    private var callback: (@MainActor () -> Void)?
    /// Whether the hook runs on every iteration.
    public private(set) var isStarted = false
    var isClosing = false

    /// A stopped hook on `loop` that calls `callback` on every iteration once started.
    public init(loop: EventLoop, _ callback: @escaping @MainActor () -> Void) throws(UVError) {
        let handle = try openHandle(uv_idle_t(), on: loop, "uv_idle_init") { uv_idle_init($0, $1) }
        self.loop = loop
        self.handle = handle
        self.callback = callback
        retainThroughData(handle, owner: self)
    }

    deinit {
        // Runs only after the close callback dropped the retain taken in init.
        self.handle.deallocate()
    }

    var uvHandle: UnsafeMutablePointer<uv_handle_t> { asHandle(self.handle) }

    /// Calls the callback on every iteration from the next one on; idempotent.
    public func start() {
        guard !self.isStarted, !self.isClosing else { return }
        self.isStarted = true
        uvAssert(uv_idle_start(self.handle, onIdleHook), "uv_idle_start")
    }

    /// Stops calling the callback (the loop may block in its poll again); idempotent.
    public func stop() {
        guard self.isStarted, !self.isClosing else { return }
        self.isStarted = false
        uvAssert(uv_idle_stop(self.handle), "uv_idle_stop")
    }

    /// Stops the hook and starts closing it; idempotent. The callback is not called again.
    public func close() {
        self.closeHandle { self.isStarted = false }
    }

    func didClose() {
        self.callback = nil
    }

    fileprivate func fire() {
        guard !self.isClosing else { return }
        self.callback?()
    }
}

private let onIdleHook: uv_idle_cb = { handle in
    guard let handle = handle.map(asHandle), let hook = owner(of: handle, as: IdleHook.self) else { return }
    enterLoop(handle, hook, ()) { hook, _ in hook.fire() }
}

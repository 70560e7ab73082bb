// BeforePollHook: a uv_prepare handle that runs a callback once per loop iteration, right before the loop blocks for
// I/O — kvod's equivalent of redis's beforeSleep, where buffered output is flushed once per turn.

internal import CLibUV

/// Loop-owned. Runs a callback on every loop iteration just before the loop blocks for I/O (`uv_prepare`).
///
/// The hook does not keep the loop alive by itself (its handle is unreferenced): `run()` still returns once nothing
/// else is active, and an iteration only happens while something else is.
@MainActor
public final class BeforePollHook: LoopHandleOwner {
    let loop: EventLoop
    /// The prepare handle; nonisolated(unsafe) only so deinit can free it, every other use is on the main actor.
    nonisolated(unsafe) let handle: UnsafeMutablePointer<uv_prepare_t>
    private var callback: (@MainActor () -> Void)?
    var isClosing = false

    /// Starts calling `callback` once per iteration of `loop`, from the next one on.
    public init(loop: EventLoop, _ callback: @escaping @MainActor () -> Void) throws(UVError) {
        let handle = try openHandle(uv_prepare_t(), on: loop, "uv_prepare_init") { uv_prepare_init($0, $1) }
        self.loop = loop
        self.handle = handle
        self.callback = callback
        retainThroughData(handle, owner: self)
        do throws(UVError) {
            try uvCheck(uv_prepare_start(handle, onBeforePoll), "uv_prepare_start")
        } catch {
            self.close()
            throw error
        }
        uv_unref(asHandle(handle))
    }

    deinit {
        // Runs only after the close callback dropped the retain taken in init.
        self.handle.deallocate()
    }

    var uvHandle: UnsafeMutablePointer<uv_handle_t> { asHandle(self.handle) }

    /// Stops the hook and starts closing it; idempotent. The callback is not called again.
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

private let onBeforePoll: uv_prepare_cb = { handle in
    guard let handle = handle.map(asHandle), let hook = owner(of: handle, as: BeforePollHook.self) else { return }
    enterLoop(handle, hook, ()) { hook, _ in hook.fire() }
}

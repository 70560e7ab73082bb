// SignalWatcher: a uv_signal handle that turns a POSIX signal into a callback on the loop thread (SIGTERM/SIGINT in
// kvod). libuv installs the process-wide handler; the callback runs from the loop, not from the signal handler.

internal import CLibUV
#if canImport(Glibc)
internal import Glibc
#endif

/// Loop-owned. Runs a callback on the loop each time the process receives `signal` (`uv_signal`). An active watcher
/// keeps the loop alive.
@MainActor
public final class SignalWatcher: LoopHandleOwner {
    let loop: EventLoop
    /// The signal handle; nonisolated(unsafe) only so deinit can free it, every other use is on the main actor.
    nonisolated(unsafe) let handle: UnsafeMutablePointer<uv_signal_t>
    private var callback: (@MainActor (Int32) -> Void)?
    var isClosing = false

    /// Starts watching `signal` (SIGTERM, SIGUSR1, …); `callback` gets the signal number.
    public init(loop: EventLoop, signal: Int32, _ callback: @escaping @MainActor (Int32) -> Void) throws(UVError) {
        let handle = try openHandle(uv_signal_t(), on: loop, "uv_signal_init") { uv_signal_init($0, $1) }
        self.loop = loop
        self.handle = handle
        self.callback = callback
        retainThroughData(handle, owner: self)
        do throws(UVError) {
            try uvCheck(uv_signal_start(handle, onSignalReceived, signal), "uv_signal_start")
            // A process can start with the signal blocked (the mask is inherited from whoever spawned it: a test
            // runner's worker thread, some init systems); a blocked signal would never reach libuv's handler.
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, signal)
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
        } catch {
            self.close()
            throw error
        }
    }

    deinit {
        // Runs only after the close callback dropped the retain taken in init.
        self.handle.deallocate()
    }

    var uvHandle: UnsafeMutablePointer<uv_handle_t> { asHandle(self.handle) }

    /// Stops watching and starts closing; idempotent. The callback is not called again.
    public func close() {
        self.closeHandle()
    }

    func didClose() {
        self.callback = nil
    }

    fileprivate func fire(_ signal: Int32) {
        guard !self.isClosing else { return }
        self.callback?(signal)
    }
}

private let onSignalReceived: uv_signal_cb = { handle, signal in
    guard let watcher = owner(of: handle.map(asHandle), as: SignalWatcher.self) else { return }
    MainActor.assumeIsolated { watcher.fire(signal) }
}

// BusyPoll: after a read, keeps the loop polling without blocking (`epoll_wait` with a zero timeout) until no read has
// come for a given time, so the next request is found by the poll instead of waking a CPU that went idle. The loop's
// wake-up is what a request waits for most at one request in flight: on a virtual machine an idle CPU halts, and the
// next packet's interrupt resumes it through the hypervisor. Spinning trades CPU time for that wait, which is why it is
// off unless asked for (`kvod --busy-poll`, docs/PERFORMANCE.md#busy-polling).

internal import CLibUV

/// Loop-owned. Polls without blocking for `window` nanoseconds after each read on the loop (`TCPStream` tells the
/// loop, the loop tells this), then lets the loop block again. An active idle handle is what makes libuv poll with a
/// zero timeout (`uv__backend_timeout`); its callback only looks whether a read came and at the clock.
///
/// The handle does not keep the loop alive (it is unreferenced). One per loop: the loop tells it of each read.
@MainActor
public final class BusyPoll: LoopHandleOwner {
    let loop: EventLoop
    /// The idle handle; nonisolated(unsafe) only so deinit can free it, every other use is on the main actor.
    nonisolated(unsafe) let handle: UnsafeMutablePointer<uv_idle_t>
    /// How long to keep polling after the last read, in nanoseconds.
    public let window: UInt64
    /// Whether the idle handle is started (the loop polls without blocking).
    private(set) var isSpinning = false
    /// Whether a read delivered bytes on any stream of the loop since the idle callback last looked; `lastReadAt` is
    /// when it last saw one.
    private var hasRead = false
    private var lastReadAt: UInt64 = 0
    var isClosing = false

    /// Starts busy polling on `loop` for `microseconds` after each read; throws if the loop already has a busy poll or
    /// `microseconds` is 0.
    public init(loop: EventLoop, microseconds: UInt64) throws(UVError) {
        guard microseconds > 0, loop.busyPoll == nil else {
            throw UVError(code: UV_EINVAL.rawValue, call: "uv_idle_init")
        }
        let handle = try openHandle(uv_idle_t(), on: loop, "uv_idle_init") { uv_idle_init($0, $1) }
        self.loop = loop
        self.handle = handle
        self.window = microseconds > UInt64.max / 1_000 ? UInt64.max : microseconds * 1_000
        retainThroughData(handle, owner: self)
        uv_unref(asHandle(handle))
        loop.busyPoll = self
    }

    deinit {
        // Runs only after the close callback dropped the retain taken in init.
        self.handle.deallocate()
    }

    var uvHandle: UnsafeMutablePointer<uv_handle_t> { asHandle(self.handle) }

    /// Called by the loop for each read that delivered bytes: notes it, and when the handle is stopped, polls without
    /// blocking from now on.
    @inline(__always)
    func didRead() {
        self.hasRead = true
        if !self.isSpinning { self.start() }
    }

    private func start() {
        guard !self.isClosing else { return }
        self.isSpinning = true
        self.hasRead = false
        self.lastReadAt = uv_hrtime()
        uvAssert(uv_idle_start(self.handle, onIdle), "uv_idle_start")
    }

    /// Stops busy polling and starts closing the handle; idempotent.
    public func close() {
        self.closeHandle {
            self.isSpinning = false
            if self.loop.busyPoll === self { self.loop.busyPoll = nil }
        }
    }

    func didClose() {}

    /// Once per loop turn while spinning: stops when no read came for `window`.
    fileprivate func turn() {
        guard !self.isClosing else { return }
        let now = uv_hrtime()
        if self.hasRead {
            self.hasRead = false
            self.lastReadAt = now
        } else if now &- self.lastReadAt >= self.window {
            self.isSpinning = false
            uvAssert(uv_idle_stop(self.handle), "uv_idle_stop")
        }
    }
}

private let onIdle: uv_idle_cb = { handle in
    guard let handle = handle.map(asHandle), let poll = owner(of: handle, as: BusyPoll.self) else { return }
    enterLoop(handle, poll, ()) { poll, _ in poll.turn() }
}

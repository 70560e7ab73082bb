// kvoctl's connection to a kvod that may be one member of a cluster (docs/SCALING.md): it connects to the first of
// the given addresses that accepts, follows the leader when a request is refused with 1012 "not the leader", and
// (for `watch`) moves to another member when the connection drops. Every retry is bounded by `--failover-wait`.

import ArgumentParser
import KVOClient
import WireProtocol
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A KVOClient connected to one of several addresses, which it may leave for another.
final class MemberClient {
    /// The connected client; replaced when the connection moves to another member.
    private(set) var client: KVOClient
    /// The address `client` is connected to.
    private(set) var address: MemberAddress
    private let options: ConnectionOptions
    private let authenticate: Bool

    /// Connects to the first of `options.addresses` that accepts (and presents the token when `authenticate`).
    /// Anything but a refused connection (a wrong token, say) fails at once.
    init(options: ConnectionOptions, authenticate: Bool) throws(ExitCode) {
        self.options = options
        self.authenticate = authenticate
        var failures: [(MemberAddress, String)] = []
        for address in options.addresses {
            do {
                self.client = try Self.open(address, options: options, authenticate: authenticate)
                self.address = address
                return
            } catch .connectionFailed(_, _, let reason) {
                failures.append((address, reason))
            } catch {
                throw options.report(error, at: address)
            }
        }
        if failures.count == 1, let (address, reason) = failures.first {
            Output.error("cannot connect to \(address): \(reason)")
        } else {
            let reasons = failures.map { "\($0.0): \($0.1)" }.joined(separator: "; ")
            Output.error("cannot connect to any of \(failures.count) members: \(reasons)")
        }
        throw KVOCtlExitCode.connectionFailed
    }

    /// A connection to `address`, after `hello` with the token when there is one and `authenticate` is true.
    private static func open(
        _ address: MemberAddress, options: ConnectionOptions, authenticate: Bool
    ) throws(KVOClientError) -> KVOClient {
        let client = try KVOClient(host: address.host, port: address.port, timeout: .seconds(options.resolvedTimeout))
        if authenticate, let token = options.resolvedToken {
            do {
                _ = try client.call("hello", ["client": "kvoctl", "token": .string(token)])
            } catch {
                client.close()
                throw error
            }
        }
        return client
    }

    /// Prints `error` as a `kvoctl: …` line naming the connected member and returns its exit status.
    func report(_ error: KVOClientError) -> ExitCode {
        self.options.report(error, at: self.address)
    }

    /// Calls `method` on the connected member. A 1012 "not the leader" answer (nothing changed) is retried on the
    /// leader it names (the connection moves there), or, while none is named or it cannot be reached, again on this
    /// member after a pause (said once on stderr, so that the wait is not a silent hang) — until `--failover-wait`
    /// has passed, when the last 1012 is thrown.
    func call(_ method: String, _ params: JSONValue? = nil) throws(KVOClientError) -> JSONValue {
        let deadline = ContinuousClock.now.advanced(by: .seconds(self.options.resolvedFailoverWait))
        var delay = Duration.milliseconds(100)
        var isWaitAnnounced = false
        while true {
            let refusal: RPCError
            do {
                return try self.client.call(method, params)
            } catch .server(let error) where error.knownCode == .notLeader {
                refusal = error
            }
            guard ContinuousClock.now < deadline else {
                Output.error(
                    "no leader accepted \(method) within \(self.failoverWaitText) s (--failover-wait); the last answer, from "
                        + "\(self.address):")
                throw .server(refusal)
            }
            if let text = refusal.data?["leader"]?.stringValue,
                let leader = try? MemberAddress.parse(text, defaultPort: self.address.port), leader != self.address,
                let moved = try? Self.open(leader, options: self.options, authenticate: self.authenticate)
            {
                self.client.close()
                self.client = moved
                self.address = leader
                continue
            }
            if !isWaitAnnounced {
                isWaitAnnounced = true
                let reason = refusal.data?["reason"]?.stringValue.map { ": \($0)" } ?? ""
                Output.error(
                    "\(self.address) does not accept \(method) (not the leader\(reason)) and names no leader to go to; "
                        + "waiting up to \(self.failoverWaitText) s for one (--failover-wait)")
            }
            sleep(for: min(delay, ContinuousClock.now.duration(to: deadline)))
            delay = min(delay * 2, .seconds(1))
        }
    }

    /// `--failover-wait` for messages: `10`, or `2.5`.
    private var failoverWaitText: String {
        let wait = self.options.resolvedFailoverWait
        return wait == wait.rounded() && wait < 1e9 ? String(Int(wait)) : String(wait)
    }

    /// After the connection to the current member was lost, connects to another: the members after it in the list
    /// first, then the others, round and round with growing pauses, until `--failover-wait` has passed.
    func moveToAnotherMember() throws(KVOClientError) {
        self.client.close()
        Output.error(
            "connection to \(self.address) lost; looking for a member to resume on, for up to "
                + "\(self.failoverWaitText) s (--failover-wait)")
        let addresses = self.options.addresses
        let start = (addresses.firstIndex(of: self.address) ?? -1) + 1
        let order = (0..<addresses.count).map { addresses[(start + $0) % addresses.count] }
        let deadline = ContinuousClock.now.advanced(by: .seconds(self.options.resolvedFailoverWait))
        var delay = Duration.milliseconds(100)
        var lastError = KVOClientError.closed
        while true {
            for address in order {
                do {
                    self.client = try Self.open(address, options: self.options, authenticate: self.authenticate)
                    self.address = address
                    return
                } catch {
                    lastError = error
                }
            }
            guard ContinuousClock.now < deadline else { throw lastError }
            sleep(for: min(delay, ContinuousClock.now.duration(to: deadline)))
            delay = min(delay * 2, .seconds(1))
        }
    }
}

/// Blocks the calling thread for `duration` (nothing when it is zero or negative).
func sleep(for duration: Duration) {
    guard duration > .zero else { return }
    let (seconds, attoseconds) = duration.components
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}

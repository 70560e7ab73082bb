// `kvoctl cluster`'s row for a follower, against a stand-in member on 127.0.0.1 that answers `hello` as a follower
// would (a real one needs etcd: Tests/cluster): before its link to the leader (`linked` false, as at the start of a
// bootstrap) the lag is unknown, not 0; once linked, it is leaderSeq − appliedSeq.

import Foundation
import Testing
import WireProtocol
#if canImport(Glibc)
import Glibc
#endif

@Suite("kvoctl cluster rows")
struct ClusterRowTests {
    @Test func aFollowerNotReplicatingYetShowsNoLag() throws {
        let member = try HelloStandIn(
            result: #"{"server":"kvod","version":"0.1.0","protocol":1,"role":"follower","term":3,"appliedSeq":0,"leader":"127.0.0.1:1","leaderSeq":0,"linked":false,"writable":false}"#)
        let table = try CLI.run(["cluster", "--host", "127.0.0.1:\(member.port)"])
        #expect(table.status == 3, "\(table)")
        let row = table.stdoutLines.last?.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        #expect(row?[1] == "follower" && row?[3] == "0" && row?[4] == "?", "\(table)")
        #expect(table.stdoutLines.last?.hasSuffix("not replicating yet") == true, "\(table)")
        let json = try parseJSON(try CLI.run(["cluster", "--host", "127.0.0.1:\(member.port)", "--format", "json"]).stdout)
        #expect(json.arrayValue?.first?["lag"] == .null && json.arrayValue?.first?["linked"] == false, "\(json)")
    }

    @Test func aLinkedFollowerShowsItsLag() throws {
        let member = try HelloStandIn(
            result: #"{"server":"kvod","version":"0.1.0","protocol":1,"role":"follower","term":3,"appliedSeq":4,"leader":"127.0.0.1:1","leaderSeq":10,"linked":true,"writable":false}"#)
        let json = try parseJSON(try CLI.run(["cluster", "--host", "127.0.0.1:\(member.port)", "--format", "json"]).stdout)
        #expect(json.arrayValue?.first?["lag"] == 6 && json.arrayValue?.first?["linked"] == true, "\(json)")
    }
}

@Suite("kvoctl waiting for a leader")
struct LeaderWaitNoticeTests {
    @Test func theWaitIsAnnouncedOnceOnStderr() throws {
        let member = try HelloStandIn(
            error: #"{"code":1012,"message":"not the leader","data":{"reason":"election in progress"}}"#)
        let started = ContinuousClock.now
        let result = try CLI.run(["set", "a", "1", "--host", "127.0.0.1:\(member.port)", "--failover-wait", "1"])
        #expect(result.status == 2 && ContinuousClock.now - started < .seconds(10), "\(result)")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.first == "kvoctl: 127.0.0.1:\(member.port) does not accept set (not the leader: election in "
            + "progress) and names no leader to go to; waiting up to 1 s for one (--failover-wait)", "\(result)")
        #expect(lines.filter { $0.contains("waiting up to") }.count == 1 && result.stderr.contains("error 1012"))
    }
}

/// A listening socket on 127.0.0.1 whose connections get the same answer to every request line: `result`, or
/// `error` (the JSON-RPC members after the id); closed (and its thread ended) when released.
private final class HelloStandIn: @unchecked Sendable {
    let port: Int
    private let descriptor: Int32

    convenience init(result: String) throws {
        try self.init(answer: #""result":\#(result)"#)
    }

    convenience init(error: String) throws {
        try self.init(answer: #""error":\#(error)"#)
    }

    private init(answer: String) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 8) == 0
                    && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread {
            while true {
                let connection = accept(descriptor, nil, nil)
                if connection < 0 { return }  // closed by deinit
                Self.answer(connection, answer)
                close(connection)
            }
        }
    }

    deinit {
        shutdown(self.descriptor, Int32(SHUT_RDWR))
        close(self.descriptor)
    }

    /// Answers each request line on `connection` with `answer` under the request's id, until the client closes.
    private static func answer(_ connection: Int32, _ answer: String) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
            if count <= 0 { return }
            pending += buffer[..<count]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                let id = (try? JSONParser.parse(line))?["id"] ?? .null
                let reply = Array(#"{"jsonrpc":"2.0","id":\#(JSONWriter.encodeString(id)),\#(answer)}"#.utf8) + [10]
                _ = reply.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            }
        }
    }
}

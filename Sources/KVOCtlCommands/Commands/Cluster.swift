// `kvoctl cluster`: `hello` on every given address, one line per member (role, term, applied seq, lag, leader,
// writable), and exit status 3 when no member is a leader that accepts writes (docs/SCALING.md).

import ArgumentParser
import KVOClient
import WireProtocol

extension KVOCtl {
    /// Shows the members of a cluster.
    struct Cluster: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show each member's role, term, applied seq, lag and leader; exit 3 when none leads.",
            discussion: """
                Sends hello to every address given with --host (a comma-separated list; $KVOD_HOST) and prints one \
                line per member: ADDRESS, ROLE (leader, follower, candidate, standalone for a kvod without \
                --cluster-etcd, or unreachable), TERM, APPLIED (the member's seq), LAG (for a follower: the \
                leader's seq it last heard minus its own; ? with "not replicating yet" while it has no link to the \
                leader, as at the start of a bootstrap), LEADER (the address it follows) and WRITABLE (whether it \
                accepts mutations now). With --format json, one JSON array of {address, role, term, appliedSeq, \
                lag, leader, writable, error} objects (a follower's also with linked). Exits 0 when some member accepts mutations (a writable \
                leader, or a standalone kvod), 3 when none does (an election, etcd without quorum, every member \
                unreachable).

                EXAMPLES:
                  kvoctl cluster --host 10.0.0.11,10.0.0.12,10.0.0.13   # needs a cluster
                  KVOD_HOST=a,b,c kvoctl cluster --format json          # needs a cluster
                """)

        @OptionGroup var connection: ConnectionOptions

        @Option(help: "text (a table, the default), json or pretty (indented JSON).")
        var format: OutputFormat = .text

        /// What one member said, or why it said nothing.
        struct Member {
            let address: MemberAddress
            let hello: JSONValue?
            let error: String?

            var role: String {
                guard let hello else { return "unreachable" }
                return hello["role"]?.stringValue ?? "standalone"
            }
            /// Whether it accepts mutations now: a writable leader, or a kvod outside any cluster.
            var writable: Bool {
                guard let hello else { return false }
                return hello["writable"]?.boolValue ?? (hello["role"] == nil)
            }
            /// A follower's distance behind the leader's seq it last heard; nil while it does not replicate from
            /// the leader yet (`linked` false: connecting, or about to bootstrap), when it knows no better.
            var lag: Int64? {
                guard self.role == "follower", !self.isWaitingForLeader, let applied = self.hello?["appliedSeq"]?.intValue,
                    let leaderSeq = self.hello?["leaderSeq"]?.intValue
                else { return nil }
                return max(0, leaderSeq - applied)
            }

            /// A follower that has no replication link to the leader yet.
            var isWaitingForLeader: Bool { self.role == "follower" && self.hello?["linked"] == false }

            var json: JSONValue {
                var object: JSONObject = ["address": .string(self.address.description), "role": .string(self.role)]
                object["term"] = self.hello?["term"] ?? .null
                object["appliedSeq"] = self.hello?["appliedSeq"] ?? .null
                object["lag"] = self.lag.map(JSONValue.int) ?? .null
                if self.role == "follower" { object["linked"] = .bool(!self.isWaitingForLeader) }
                object["leader"] = self.hello?["leader"] ?? .null
                object["writable"] = .bool(self.writable)
                object["error"] = self.error.map(JSONValue.string) ?? .null
                return .object(object)
            }

            var cells: [String] {
                func text(_ value: JSONValue?) -> String {
                    guard let value, value != .null else { return "-" }
                    return value.stringValue ?? JSONWriter.encodeString(value)
                }
                guard self.hello != nil else {
                    return [self.address.description, self.role, "-", "-", "-", "-", "no", self.error ?? ""]
                }
                return [
                    self.address.description, self.role, text(self.hello?["term"]), text(self.hello?["appliedSeq"]),
                    self.lag.map(String.init) ?? (self.isWaitingForLeader ? "?" : "-"), text(self.hello?["leader"]),
                    self.writable ? "yes" : "no", self.isWaitingForLeader ? "not replicating yet" : "",
                ]
            }
        }

        func run() throws {
            let members = self.connection.addresses.map(self.ask)
            if self.format != .text {
                try self.format.printJSON(.array(members.map(\.json)))
            } else {
                let header = ["ADDRESS", "ROLE", "TERM", "APPLIED", "LAG", "LEADER", "WRITABLE", ""]
                for line in Self.table([header] + members.map(\.cells)) { try Output.line(line) }
            }
            if !members.contains(where: \.writable) {
                if self.format == .text { Output.error("no member accepts mutations (no writable leader)") }
                throw KVOCtlExitCode.noLeader
            }
        }

        /// `hello` (with the token, when there is one) on `address`.
        private func ask(_ address: MemberAddress) -> Member {
            do {
                let client = try KVOClient(
                    host: address.host, port: address.port, timeout: .seconds(self.connection.resolvedTimeout))
                defer { client.close() }
                var params: JSONObject = ["client": "kvoctl"]
                if let token = self.connection.resolvedToken { params["token"] = .string(token) }
                return Member(address: address, hello: try client.call("hello", .object(params)), error: nil)
            } catch {
                return Member(address: address, hello: nil, error: "\(error)")
            }
        }

        /// Rows as lines with columns padded to their widest cell, two spaces apart (the last column unpadded).
        static func table(_ rows: [[String]]) -> [String] {
            let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].count }.max() ?? 0 }
            return rows.map { row in
                var line = ""
                for (column, cell) in row.enumerated() {
                    line += column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count + 2)
                }
                while line.hasSuffix(" ") { line.removeLast() }
                return line
            }
        }
    }
}

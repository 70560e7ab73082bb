// `kvoctl get PATH`: one `get` request, the value printed as compact JSON; with query flags (QueryOptions.swift), the
// query's window of a collection.

import ArgumentParser
import KVOClient
import WireProtocol

extension KVOCtl {
    /// Prints the value at a key path.
    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the value at a key path as JSON (indented on a terminal, one line when piped).",
            discussion: """
                A key that was never set prints null. A path through a number, string, bool or array is error 1005.
                With --meta, prints {"value":…,"seq":…,"modSeq":…}: the seq now and the seq that last stored the \
                key (null for a computed key or one never set), for a later `kvoctl set --if-mod-seq`.

                With a query flag (--where, --var, --order-by, --offset, --limit, --select), PATH is a collection and \
                get prints the query's window: the elements the predicate keeps, sorted, from --offset, at most \
                --limit, each with its $id and the --select keys (Protocol/methods.md#queries). With --meta, \
                {"value":[…],"count":…,"seq":…}: the window, the number of matches in all and the seq. On a \
                terminal, stderr says which rows of how many matches were printed when more match.

                EXAMPLES:
                  kvoctl get person.address.city
                  kvoctl insert department.employees '{"name":"Ada","salary":120}' '{"name":"Bob","salary":90}'
                  kvoctl get department.employees --where 'salary > 100' --select name   # prints [{"$id":7,"name":"Ada"}]
                  kvoctl get department.employees --order-by -salary --limit 1 --select name --meta
                """)

        /// Where kvod is and how long to wait for it.
        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The key path, e.g. person.address.city.")
        var path: String

        @Flag(help: "Print the value with the current seq and the key's modSeq.")
        var meta = false

        @OptionGroup var output: ValueOptions

        /// The query flags: with any of them, PATH is a collection and the window is printed.
        @OptionGroup(title: "Query") var query: QueryOptions

        /// Connects, sends the request(s) and prints the outcome; failures become exit statuses (ExitCodes.swift).
        func run() throws {
            let client = try self.connection.connect()
            if self.query.isQuery { return try self.printQuery(on: client) }
            let value: JSONValue
            do {
                if self.meta {
                    value = try client.call("get", .object(["path": .string(self.path), "meta": .bool(true)]))
                } else {
                    value = try client.call("get", .object(["path": .string(self.path)]))["value"] ?? .null
                }
            } catch {
                throw client.report(error)
            }
            try self.output.print(value)
        }

        /// `get` with the query: the window (with --meta the whole result), and on a terminal a word on stderr when
        /// more rows match than were printed.
        private func printQuery(on client: MemberClient) throws(ExitCode) {
            let result: JSONValue
            do {
                result = try client.call("get", .object(["path": .string(self.path), "query": self.query.query]))
            } catch {
                throw client.report(error)
            }
            try self.output.print(self.meta ? result : result["value"] ?? .null)
            let shown = result["value"]?.arrayValue?.count ?? 0
            let count = result["count"]?.intValue ?? 0
            let offset = self.query.offset ?? 0
            if JSONOutput.isTerminal, Int64(shown) < count {
                let rows = shown == 0 ? "no rows" : "rows \(offset + 1)-\(offset + shown)"
                Output.error("\(rows) of \(count) matches")
            }
        }
    }
}

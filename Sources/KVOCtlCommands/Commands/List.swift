// `kvoctl ls [PATH]`: the keys of an object (with the type of each current value, from `describe PATH`), or a page
// of a collection (`get` with `offset` and `limit`, Protocol/methods.md#get), without fetching the whole value.

import ArgumentParser
import KVOClient
import WireProtocol

extension KVOCtl {
    /// Lists the keys of an object or a page of a collection.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ls",
            abstract: "List the keys of an object, or a page of a collection (--offset, --limit).",
            discussion: """
                For an object (the root without PATH), one line per key: the key and the type of its current value \
                (from describe), then the keys its class declares without a value (computed, or unset). For a collection (a to-many, an array, a set), one line per element of the page: \
                its index and the element as compact JSON; when more elements follow, stderr says how to get the \
                next page. Only the keys, or the page, travel, where `kvoctl get` of a large object or collection \
                sends all of it. The lines are the default, on a terminal and in a pipe; with --format json (or \
                pretty): {"keys": {KEY: TYPE}} for an object, {"value": [...], "offset": N, "count": TOTAL} for a \
                collection.

                EXAMPLES:
                  kvoctl ls                         # the root's keys
                  kvoctl ls person                  # firstName string, ..., fullName computed
                  kvoctl insert department.employees '{"name":"Ada"}' '{"name":"Grace"}'
                  kvoctl ls department.employees --offset 1 --limit 1   # 1  {…"Grace"…}
                  kvoctl ls department.employees.name   # 0  "Ada" and 1  "Grace"
                """)

        @OptionGroup var connection: ConnectionOptions

        @Option(help: "The first element of a collection to list (default 0).")
        var offset: Int = 0

        @Option(help: "The most elements of a collection to list (default 100; 0 lists none, only the count).")
        var limit: Int = 100

        @Option(help: "text (lines: the default), json or pretty (indented JSON).")
        var format: OutputFormat = .text

        @Argument(help: "The key path of an object or a collection (default: the root).")
        var path: String = ""

        /// Rejects invalid values with a ValidationError (exit status 64).
        func validate() throws {
            if self.offset < 0 { throw ValidationError("--offset must be 0 or more.") }
            if self.limit < 0 { throw ValidationError("--limit must be 0 or more.") }
        }

        /// Connects, asks for the keys (an object) or else a page (a collection), and prints them.
        func run() throws {
            let client = try self.connection.connect()
            let keys: JSONValue?
            let page: JSONValue?
            do {
                (keys, page) = try self.fetch(client)
            } catch .server(let error) where error.knownCode == .typeMismatch {
                Output.error("\(self.path) is neither an object nor a collection: print it with kvoctl get")
                throw KVOCtlExitCode.serverError
            } catch {
                throw client.report(error)
            }
            if let keys { try self.printKeys(keys) }
            if let page { try self.printPage(page) }
        }

        /// The keys of the object at the path (describe), or, when it is not an object, a page of the collection
        /// there (get with offset and limit; 1005 when it is not one either).
        private func fetch(_ client: MemberClient) throws(KVOClientError) -> (keys: JSONValue?, page: JSONValue?) {
            do {
                let description = try client.call("describe", ["path": .string(self.path)])
                if let keys = description["keys"] { return (Self.allKeys(keys, description["class"]), nil) }
            } catch .server(let error) where error.knownCode == .typeMismatch {
                // not an object: a collection, or a value ls cannot list
            }
            let params: JSONObject = [
                "path": .string(self.path), "offset": .int(Int64(self.offset)), "limit": .int(Int64(self.limit)),
            ]
            return (nil, try client.call("get", .object(params)))
        }

        /// The current keys with the types of their values, then the keys the class declares that have no value:
        /// computed ones as `computed`, the others as `unset`.
        static func allKeys(_ current: JSONValue, _ objectClass: JSONValue?) -> JSONValue {
            guard case .object(var keys) = current else { return current }
            if case .object(let properties)? = objectClass?["properties"] {
                for (name, property) in properties.members where keys[name] == nil {
                    keys[name] = property["computed"] != nil ? "computed" : "unset"
                }
            }
            return .object(keys)
        }

        private func printKeys(_ keys: JSONValue) throws(ExitCode) {
            guard self.format == .text else { return try self.format.printJSON(.object(["keys": keys])) }
            guard case .object(let object) = keys else { return }
            let width = object.keys.map(\.count).max() ?? 0
            for (key, type) in object.members {
                try Output.line(key + String(repeating: " ", count: width - key.count + 2) + (type.stringValue ?? "?"))
            }
        }

        private func printPage(_ result: JSONValue) throws(ExitCode) {
            let elements = result["value"]?.arrayValue ?? []
            let count = result["count"]?.intValue ?? Int64(elements.count)
            guard self.format == .text else {
                return try self.format.printJSON(
                    .object(["value": .array(elements), "offset": .int(Int64(self.offset)), "count": .int(count)]))
            }
            let last = self.offset + elements.count
            let width = String(max(last - 1, 0)).count
            for (index, element) in elements.enumerated() {
                let number = String(self.offset + index)
                try Output.line(
                    String(repeating: " ", count: width - number.count) + number + "  "
                        + JSONOutput.render(element, format: .json))
            }
            if Int64(last) < count {
                Output.error(
                    "\(elements.count) of \(count) (\(self.offset)-\(max(last - 1, self.offset))); the next page: "
                        + "--offset \(last) --limit \(self.limit)")
            }
        }
    }
}

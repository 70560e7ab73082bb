// `get` and `set`: key-value coding over the wire (Protocol/methods.md#get, #set).
import ObjectGraph
import ValueCoding
import WireProtocol

extension Dispatcher {
    func get(_ request: RPCRequest, on connection: Connection) throws {
        self.server.countRequest(isMutation: false)
        let params = Params(request.params, names: ["path"], method: "get")
        try params.rejectUnknown()
        let path = try self.keyPath(params.string("path"))
        let value = try self.server.graph.get(path)
        let seq = self.server.graph.seq
        self.writeResult {
            $0.append(contentsOf: #"{"value":"#.utf8)
            value.appendJSON(to: &$0)
            $0.append(contentsOf: #","seq":"#.utf8)
            JSONWriter.appendInt(Int64(seq), to: &$0)
            $0.append(UInt8(ascii: "}"))
        }
    }

    func set(_ request: RPCRequest, on connection: Connection) throws {
        let params = Params(request.params, names: ["path", "value"], method: "set")
        try params.rejectUnknown()
        let path = try self.keyPath(params.string("path"))
        let value = Value(json: try params.required("value"))
        // Notifications are queued on every connection inside this call, before the response (Dispatcher.swift).
        let result = try self.server.graph.set(path, to: value)
        let stored = result.storedValue
        self.server.countRequest(isMutation: true)
        self.writeResult {
            $0.append(contentsOf: #"{"seq":"#.utf8)
            JSONWriter.appendInt(Int64(result.seq), to: &$0)
            if let stored {
                // Validation stored something else than was sent (coerced, trimmed, a null replacement).
                $0.append(contentsOf: #","value":"#.utf8)
                stored.appendJSON(to: &$0)
            }
            $0.append(UInt8(ascii: "}"))
        }
    }

    func validate(_ request: RPCRequest, on connection: Connection) throws {
        self.server.countRequest(isMutation: false)
        let params = Params(request.params, names: ["path", "value"], method: "validate")
        try params.rejectUnknown()
        let path = try self.keyPath(params.string("path"))
        let value = try self.server.graph.validate(path, Value(json: try params.required("value")))
        self.writeResult {
            $0.append(contentsOf: #"{"value":"#.utf8)
            value.appendJSON(to: &$0)
            $0.append(UInt8(ascii: "}"))
        }
    }
}

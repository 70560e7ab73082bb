// JSONValue and JSONObject: order-insensitive object equality, in-place replacement of duplicate keys, literals,
// typed accessors and the JSON `description`.

import Testing
import WireProtocol

struct JSONValueTests {
    @Test("object equality ignores member order but not keys or values")
    func orderInsensitiveEquality() {
        let forward: JSONObject = ["a": 1, "b": [2], "c": ["d": .null]]
        let backward: JSONObject = ["c": ["d": .null], "b": [2], "a": 1]
        #expect(forward == backward)
        #expect(JSONValue.object(forward) == .object(backward))
        #expect(forward != ["a": 1, "b": [2]])
        #expect(forward != ["a": 1, "b": [2], "x": ["d": .null]])
        #expect(forward != ["a": 1, "b": [3], "c": ["d": .null]])
        #expect(JSONObject() == [:])
        // Nested objects compare order-insensitively too; arrays stay ordered.
        #expect(JSONValue.array([["x": 1, "y": 2]]) == [["y": 2, "x": 1]])
        #expect(JSONValue.array([1, 2]) != [2, 1])
    }

    @Test("large objects compare order-insensitively as well")
    func largeObjectEquality() {
        var forward = JSONObject()
        var backward = JSONObject()
        for index in 0..<100 { forward["k\(index)"] = .int(Int64(index)) }
        for index in (0..<100).reversed() { backward["k\(index)"] = .int(Int64(index)) }
        #expect(forward == backward)
        backward["k50"] = .int(-1)
        #expect(forward != backward)
        backward["k50"] = nil
        backward["other"] = .int(50)
        #expect(forward != backward)
    }

    @Test("setting an existing key replaces it in place; setting nil removes it")
    func subscriptSetter() {
        var object: JSONObject = ["a": 1, "b": 2, "c": 3]
        object["b"] = "two"
        #expect(object.keys == ["a", "b", "c"])
        #expect(object["b"] == "two")
        object["a"] = nil
        #expect(object.keys == ["b", "c"] && object.count == 2)
        #expect(object["a"] == nil)
        let duplicates: JSONObject = ["x": 1, "y": 2, "x": 3]
        #expect(duplicates.keys == ["x", "y"] && duplicates.values == [3, 2])
    }

    @Test("accessors return the payload of the matching kind only")
    func accessors() {
        let value: JSONValue = ["s": "text", "i": 3, "d": 2.5, "b": true, "n": .null, "a": [1]]
        #expect(value["s"]?.stringValue == "text")
        #expect(value["i"]?.intValue == 3 && value["i"]?.doubleValue == 3)
        #expect(value["d"]?.doubleValue == 2.5 && value["d"]?.intValue == nil)
        #expect(value["b"]?.boolValue == true && value["n"]?.isNull == true)
        #expect(value["a"]?.arrayValue == [1] && value["missing"] == nil)
        #expect(value.objectValue?.count == 6 && JSONValue.int(1)["s"] == nil)
    }

    @Test("description is compact JSON")
    func description() {
        let value: JSONValue = ["a": [1, 2.5, "x\n"], "b": .null]
        #expect(value.description == #"{"a":[1,2.5,"x\n"],"b":null}"#)
        #expect("\(value.objectValue!)" == value.description)
    }
}

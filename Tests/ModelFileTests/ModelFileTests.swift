// ModelFile.load: what a model file turns into (types, defaults, rules, dependencies) and how each kind of bad file
// is reported (file position for JSON syntax, field path and line for model problems).
import ModelFile
import ObjectGraph
import Testing

struct ModelFileTests {
    static func load(_ text: String) throws(ModelFileError) -> Model {
        try ModelFile.load(Array(text.utf8), fileName: "model.json")
    }

    static func stored(_ model: Model, _ className: String, _ key: String) -> StoredProperty? {
        guard case .stored(let property)? = model.classes[className]?.property(key)?.kind else { return nil }
        return property
    }

    // MARK: - Loading

    @Test func readsTypesDefaultsAndRules() throws {
        let model = try Self.load(
            #"""
            {
              "root": "Shop",
              "classes": {
                "Shop": {
                  "properties": {
                    "price": { "type": "double", "default": 5, "min": 0, "max": 1e6 },
                    "count": { "type": "int", "default": 2.0, "nullable": false },
                    "size": { "type": "string", "enum": ["S", "M", "L"], "notify": "manual" },
                    "weights": { "type": "[double]", "default": [1, 2.5] },
                    "tags": { "type": "array<string>", "minLength": 1, "maxLength": 3 },
                    "extra": { "type": "any", "default": { "a": [1, { "b": true }] } },
                    "items": { "type": "[Item]", "default": [] },
                    "note": { "type": "Object", "default": {} },
                    "label": { "computed": "size + \" x\" + count", "affectedBy": ["weights"], "type": "string" }
                  }
                },
                "Item": { "open": true, "description": "no properties" }
              }
            }
            """#)
        #expect(model.root.name == "Shop")
        #expect(!model.root.isOpen)
        #expect(model.classes["Item"]?.isOpen == true)
        let price = try #require(Self.stored(model, "Shop", "price"))
        #expect(price.defaultValue == .double(5))  // an int default of a double property becomes a double
        #expect(price.rules == [.min(0), .max(1e6)])
        #expect(price.isNullable && price.nullPolicy == .reject)
        let count = try #require(Self.stored(model, "Shop", "count"))
        #expect(count.defaultValue == .int(2))
        #expect(!count.isNullable && count.nullPolicy == .reject)
        #expect(Self.stored(model, "Shop", "size")?.rules == [.oneOf(["S", "M", "L"])])
        #expect(Self.stored(model, "Shop", "size")?.notification == .manual)
        #expect(Self.stored(model, "Shop", "weights")?.defaultValue == .array([.double(1), .double(2.5)]))
        #expect(Self.stored(model, "Shop", "tags")?.type == .array(.string))
        #expect(Self.stored(model, "Shop", "tags")?.rules == [.minLength(1), .maxLength(3)])
        #expect(Self.stored(model, "Shop", "items")?.type == .array(.object("Item")))
        guard case .computed(let label)? = model.classes["Shop"]?.property("label")?.kind else {
            Issue.record("label is not computed")
            return
        }
        #expect(label.dependencies == ["size", "count", "weights"])

        let graph = Graph(model: model)
        #expect(try graph.get("label") == " x2")  // null concatenates as ""
        try graph.set("size", to: "M")
        #expect(try graph.get("label") == "M x2")
        // An object in an `any` default becomes an open object, nested ones too.
        guard case .array(let elements) = try graph.get("extra.a"), case .record(let inner)? = elements.last else {
            Issue.record("extra.a is not an array ending in an object")
            return
        }
        #expect(elements.first == 1)
        #expect(inner.keys == ["b"] && inner.values == [true])
    }

    @Test func acceptsAnOpenRootWithoutClassesAndAByteOrderMark() throws {
        let model = try ModelFile.load([0xEF, 0xBB, 0xBF] + Array(#"{"root": "Object"}"#.utf8), fileName: "open.json")
        #expect(model.root === ObjectClass.open)
        #expect(model.classNames.isEmpty)
    }

    @Test func syntaxColumnsCountCharactersNotBytes() {
        #expect {
            try Self.load("{\n  \"root\": \"Café\" x }")
        } throws: { error in
            guard let error = error as? ModelFileError else { return false }
            return error.line == 2 && error.column == 18 && error.field == nil
        }
    }

    @Test func locatesMembersWrittenWithEscapes() {
        #expect {
            try Self.load(
                #"{ "root": "R", "classes": {"R": {"properties": {"\u0061ge": {"type": "int","# + "\n\"mx\": 1}}}}}")
        } throws: { error in
            guard let error = error as? ModelFileError else { return false }
            return error.line == 2 && error.field == "classes.R.properties.age.mx"
                && error.message == "unknown member 'mx' (did you mean 'max'?)"
        }
    }

    @Test func describesErrorsWithTheirPosition() {
        #expect(
            ModelFileError(fileName: "default.json", line: 12, column: 5, message: "invalid JSON: expected ':'")
                .description == "default.json:12:5: invalid JSON: expected ':'")
        #expect(
            ModelFileError(
                fileName: "model.json", line: 7, field: "classes.LabColor.properties.color.computed",
                message: "column 14: unknown function 'foo'"
            ).description
                == "model.json:7: classes.LabColor.properties.color.computed: column 14: unknown function 'foo'")
        #expect(
            ModelFileError(fileName: "model.json", field: "root", message: "missing member").description
                == "model.json: root: missing member")
    }

    // MARK: - Errors

    /// A bad model file and the error it must give (`message` is a prefix of the actual message).
    struct BadFile: Sendable, CustomTestStringConvertible {
        var name: String
        var text: String
        var line: Int?
        var column: Int? = nil
        var field: String?
        var message: String
        var testDescription: String { self.name }
    }

    /// A file with one class `Root` whose properties are `properties` (a JSON object body).
    static func rootWith(_ properties: String, open: Bool = false) -> String {
        """
        {
          "root": "Root",
          "classes": {
            "Root": {
              "open": \(open),
              "properties": {
                \(properties)
              }
            },
            "Person": {
              "properties": {
                "name": { "type": "string" },
                "visits": { "type": "int", "default": 0 }
              }
            }
          }
        }
        """
    }

    static let badFiles: [BadFile] = [
        BadFile(
            name: "invalid JSON at line 3",
            text: "{\n  \"root\": \"Root\",\n  \"classes\": { \"Root\": { } ,, }\n}",
            line: 3, column: 29, field: nil, message: "invalid JSON: "),
        BadFile(name: "empty file", text: "", line: 1, column: 1, field: nil, message: "invalid JSON: "),
        BadFile(name: "not an object", text: "[]", line: nil, field: nil, message: "expected an object, got an array"),
        BadFile(
            name: "missing root", text: #"{ "classes": {} }"#, line: nil, field: "root",
            message: "missing member: the name of the root object's class"),
        BadFile(
            name: "unknown root class", text: "{\n\"root\": \"Rot\",\n\"classes\": { \"Root\": {} } }", line: 2,
            field: "root", message: "unknown class 'Rot' (the file declares Root)"),
        BadFile(
            name: "unknown top-level member", text: #"{ "root": "Object", "clases": {} }"#, line: 1,
            field: "clases", message: "unknown member 'clases' (did you mean 'classes'?)"),
        BadFile(
            name: "unknown property type", text: Self.rootWith(#""age": { "type": "integer" }"#), line: 7,
            field: "classes.Root.properties.age.type", message: "unknown type 'integer' (bool, int, double, string"),
        BadFile(
            name: "unknown class in an array type", text: Self.rootWith(#""staff": { "type": "[Employee]" }"#),
            line: 7, field: "classes.Root.properties.staff.type", message: "unknown type 'Employee'"),
        BadFile(
            name: "unparsable type", text: Self.rootWith(#""staff": { "type": "[int" }"#), line: 7,
            field: "classes.Root.properties.staff.type", message: "unknown type '[int'"),
        BadFile(
            name: "typo in a member name", text: Self.rootWith(#""age": { "type": "int", "defualt": 3 }"#), line: 7,
            field: "classes.Root.properties.age.defualt",
            message: "unknown member 'defualt' (did you mean 'default'?)"),
        BadFile(
            name: "typo in a class member", text: "{\"root\": \"Root\", \"classes\": {\"Root\": {\"propertys\": {}}}}",
            line: 1, field: "classes.Root.propertys",
            message: "unknown member 'propertys' (did you mean 'properties'?)"),
        BadFile(
            name: "wrong member type", text: Self.rootWith(#""age": { "type": "int", "nullable": "no" }"#), line: 7,
            field: "classes.Root.properties.age.nullable", message: "expected true or false, got a string"),
        BadFile(
            name: "property that is not an object", text: Self.rootWith(#""age": "int""#), line: 7,
            field: "classes.Root.properties.age", message: "expected an object, got a string"),
        BadFile(
            name: "bad expression", text: Self.rootWith(#""twice": { "computed": "2 * foo(1)" }"#), line: 7,
            field: "classes.Root.properties.twice.computed", message: "column 5: unknown function 'foo'"),
        BadFile(
            name: "expression reading an undeclared key",
            text: Self.rootWith(#""twice": { "computed": "2 * count" }"#), line: 7,
            field: "classes.Root.properties.twice.computed",
            message: "'count' names 'count', which Root does not declare"),
        BadFile(
            name: "dependency cycle",
            text: Self.rootWith(#""a": { "computed": "b + 1" },"# + "\n" + #""b": { "computed": "a + 1" }"#), line: 7,
            field: "classes.Root.properties.a", message: "dependency cycle: Root.a -> Root.b -> Root.a"),
        BadFile(
            name: "undeclared affectedBy key on a typed class",
            text: Self.rootWith(
                #""person": { "type": "Person", "default": {} },"# + "\n"
                    + #""label": { "computed": "person.name", "affectedBy": ["person.nickname"] }"#),
            line: 8, field: "classes.Root.properties.label.affectedBy",
            message: "'person.nickname' names 'nickname', which Person does not declare"),
        BadFile(
            name: "malformed affectedBy path",
            text: Self.rootWith(#""x": { "computed": "1", "affectedBy": ["a..b"] }"#),
            line: 7, field: "classes.Root.properties.x.affectedBy", message: "'a..b' is not a key path"),
        BadFile(
            name: "increments naming a non-int key",
            text: Self.rootWith(
                #""label": { "type": "string" },"# + "\n" + #""total": { "type": "double", "increments": ["label"] }"#),
            line: 8, field: "classes.Root.properties.total.increments",
            message: "'label' is a string; increments needs an int property"),
        BadFile(
            name: "increments naming an unknown key",
            text: Self.rootWith(#""total": { "type": "double", "increments": ["count"] }"#), line: 7,
            field: "classes.Root.properties.total.increments", message: "'count' is not a property of Root"),
        BadFile(
            name: "increments with manual notification",
            text: Self.rootWith(
                #""n": { "type": "int" }, "t": { "type": "int", "notify": "manual", "increments": ["n"] }"#),
            line: 7, field: "classes.Root.properties.t.increments",
            message: "increments happen with notifications; notify manual has none"),
        BadFile(
            name: "default that does not fit the type",
            text: Self.rootWith(#""age": { "type": "int", "default": "ten" }"#),
            line: 7, field: "classes.Root.properties.age.default",
            message: "the default does not fit the type int: got a string"),
        BadFile(
            name: "fractional default for an int", text: Self.rootWith(#""age": { "type": "int", "default": 1.5 }"#),
            line: 7, field: "classes.Root.properties.age.default", message: "the default is not an int: 1.5"),
        BadFile(
            name: "object default with keys",
            text: Self.rootWith(#""person": { "type": "Person", "default": { "name": "Ada" } }"#), line: 7,
            field: "classes.Root.properties.person.default",
            message: "the default must be {}: a new Person takes its keys' defaults from class Person"),
        BadFile(
            name: "enum value that does not fit",
            text: Self.rootWith(#""size": { "type": "int", "enum": [1, "two"] }"#),
            line: 7, field: "classes.Root.properties.size.enum",
            message: #""two": does not fit the type int: got a string"#),
        BadFile(
            name: "invalid regex", text: Self.rootWith(#""code": { "type": "string", "pattern": "[a-" }"#), line: 7,
            field: "classes.Root.properties.code.pattern", message: "invalid regular expression: "),
        BadFile(
            name: "pattern on a number", text: Self.rootWith(#""age": { "type": "int", "pattern": "[0-9]+" }"#),
            line: 7, field: "classes.Root.properties.age.pattern", message: "'pattern' applies to strings only"),
        BadFile(
            name: "min above max", text: Self.rootWith(#""age": { "type": "int", "min": 10, "max": 1 }"#), line: 7,
            field: "classes.Root.properties.age.max", message: "max is less than min"),
        BadFile(
            name: "not nullable without a default",
            text: Self.rootWith(#""age": { "type": "int", "nullable": false }"#),
            line: 7, field: "classes.Root.properties.age.default",
            message: "missing member: a property that is not nullable needs a default"),
        BadFile(
            name: "nullValue on a nullable property",
            text: Self.rootWith(#""age": { "type": "int", "nullable": true, "nullValue": 0 }"#), line: 7,
            field: "classes.Root.properties.age.nullValue", message: "a nullable property stores null"),
        BadFile(
            name: "unknown notification policy", text: Self.rootWith(#""age": { "type": "int", "notify": "never" }"#),
            line: 7, field: "classes.Root.properties.age.notify",
            message: "unknown policy 'never' (always, onChange or manual)"),
        BadFile(
            name: "stored member on a computed property",
            text: Self.rootWith(#""x": { "computed": "1", "default": 2 }"#), line: 7,
            field: "classes.Root.properties.x.default", message: "'default' does not apply to a computed property"),
        BadFile(
            name: "missing type", text: Self.rootWith(#""age": { "default": 1 }"#), line: 7,
            field: "classes.Root.properties.age.type", message: "missing member: a stored property needs a 'type'"),
        BadFile(
            name: "invalid key", text: Self.rootWith(#""$age": { "type": "int" }"#), line: 7,
            field: "classes.Root.properties.$age", message: "'$age' cannot be a key"),
        BadFile(
            name: "class named like a built-in type", text: #"{ "root": "Object", "classes": { "int": {} } }"#,
            line: 1, field: "classes.int", message: "'int' is a built-in type, not a class name"),
        BadFile(
            name: "duplicate member",
            text: Self.rootWith(#""age": { "type": "int" },"# + "\n" + #""age": { "type": "int" }"#),
            line: 8, field: "classes.Root.properties.age", message: "duplicate member 'age'"),
        BadFile(
            name: "default objects nesting forever",
            text: #"{ "root": "A", "classes": { "A": { "properties": { "a": { "type": "A", "default": {} } } } } }"#,
            line: 1, field: "classes.A", message: "default objects nest forever: A -> A"),
    ]

    @Test("a bad model file names the problem and where it is", arguments: Self.badFiles)
    func rejects(_ file: BadFile) {
        do {
            let model = try Self.load(file.text)
            Issue.record("loaded a model with root \(model.root.name)")
        } catch {
            #expect(error.fileName == "model.json")
            #expect(error.field == file.field)
            #expect(error.message.hasPrefix(file.message), "message: \(error.message)")
            #expect(error.line == file.line, "\(error)")
            #expect(error.column == file.column, "\(error)")
        }
    }
}

// The shipped default model (Sources/kvod/default-model.json): it loads, declares what docs/MODEL.md says it does,
// and a graph made from it behaves like the seeds' examples. Observation semantics are tested in ObjectGraphTests.
import Foundation
import ModelFile
import ObjectGraph
import Testing

struct DefaultModelTests {
    /// The file kvod embeds, read from the source tree.
    static func load() throws -> Model {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/kvod/default-model.json")
        return try ModelFile.load(Array(try Data(contentsOf: url)), fileName: "default-model.json")
    }

    static func stored(_ model: Model, _ className: String, _ key: String) -> StoredProperty? {
        guard case .stored(let property)? = model.classes[className]?.property(key)?.kind else { return nil }
        return property
    }

    static func computed(_ model: Model, _ className: String, _ key: String) -> ComputedProperty? {
        guard case .computed(let property)? = model.classes[className]?.property(key)?.kind else { return nil }
        return property
    }

    // MARK: - Declarations

    @Test func declaresTheSeedClasses() throws {
        let model = try Self.load()
        #expect(model.root.name == "Root")
        #expect(model.root.isOpen)
        #expect(
            model.classNames == [
                "Root", "LabColor", "Person", "Address", "Account", "Contact", "Department", "Employee",
            ])
        #expect(model.root.properties.map(\.name) == ["labColor", "person", "account", "contact", "department"])
        for property in model.root.properties {
            let stored = try #require(Self.stored(model, "Root", property.name))
            #expect(stored.defaultValue == .record(Record()), "\(property.name) starts as a new object")
        }
        #expect(model.classes["LabColor"]?.isOpen == false)
    }

    @Test func labColorDependsLikeTheSeeds() throws {
        let model = try Self.load()
        let l = try #require(Self.stored(model, "LabColor", "lComponent"))
        #expect(l.type == .double)
        #expect(l.defaultValue == .double(53))
        #expect(!l.isNullable)
        #expect(l.nullPolicy == .replace(.double(0)))
        #expect(Self.stored(model, "LabColor", "aComponent")?.defaultValue == .double(0))
        #expect(Self.computed(model, "LabColor", "redComponent")?.dependencies == ["lComponent"])
        #expect(Self.computed(model, "LabColor", "greenComponent")?.dependencies == ["lComponent", "aComponent"])
        #expect(Self.computed(model, "LabColor", "blueComponent")?.dependencies == ["lComponent", "bComponent"])
        #expect(
            Self.computed(model, "LabColor", "color")?.dependencies == [
                "redComponent", "greenComponent", "blueComponent",
            ])
        #expect(Self.computed(model, "LabColor", "color")?.expressionText?.hasPrefix("format(") == true)
    }

    @Test func otherClassesHaveTheirPolicies() throws {
        let model = try Self.load()
        #expect(Self.computed(model, "Person", "fullName")?.dependencies == ["firstName", "lastName"])
        #expect(Self.stored(model, "Person", "address")?.type == .object("Address"))
        let balance = try #require(Self.stored(model, "Account", "openingBalance"))
        #expect(balance.notification == .onChange)
        #expect(balance.sideEffects == [.increment(key: "itemChanged", by: 1)])
        #expect(Self.stored(model, "Account", "itemChanged")?.type == .int)
        #expect(Self.stored(model, "Account", "itemChanged")?.notification == .always)
        let name = try #require(Self.stored(model, "Contact", "name"))
        #expect(name.rules == [.trim, .maxLength(100)])
        #expect(name.nullPolicy == .replace(.string("")))
        #expect(Self.stored(model, "Contact", "email")?.rules == [.trim, .pattern(#"^[^@\s]+@[^@\s]+\.[^@\s]+$"#)])
        let manager = try #require(Self.stored(model, "Department", "manager"))
        #expect(manager.type == .object("Employee"))
        #expect(manager.isNullable && manager.defaultValue == .null)
        #expect(Self.computed(model, "Department", "totalSalary")?.dependencies == ["employees.@sum.salary"])
        #expect(Self.stored(model, "Employee", "salary")?.rules == [.min(0)])
    }

    // MARK: - A graph of the default model

    @Test func labColorComputesAHexColor() throws {
        let graph = Graph(model: try Self.load())
        #expect(try graph.get("labColor.color") == "#36333A")
        let red = try graph.get("labColor.redComponent")
        #expect(red == .double(100 * pow(69.0 / 116.0, 3)))

        try graph.set("labColor.lComponent", to: 100)
        #expect(try graph.get("labColor.redComponent") == .double(100))
        #expect(try graph.get("labColor.color") == "#FFF2FF")

        // The seeds' setNilValueForKey: null stores the declared replacement.
        let result = try graph.set("labColor.lComponent", to: .null)
        #expect(result.storedValue == .double(0))
        #expect(try graph.get("labColor.color") == "#000000")
    }

    @Test func personFullNameAndAddress() throws {
        let graph = Graph(model: try Self.load())
        try graph.set("person.firstName", to: "Ada")
        try graph.set("person.lastName", to: "Lovelace")
        #expect(try graph.get("person.fullName") == "Ada Lovelace")
        #expect(try graph.get("person.address.city") == "")
        try graph.set("person.address.city", to: "London")
        #expect(try graph.get("person.address.city") == "London")
    }

    @Test func contactValidation() throws {
        let graph = Graph(model: try Self.load())
        #expect(try graph.set("contact.name", to: "  Bob  ").storedValue == "Bob")
        #expect(try graph.get("contact.name") == "Bob")
        #expect(try graph.set("contact.name", to: .null).storedValue == "")
        try graph.set("contact.email", to: "bob@example.com")
        #expect {
            try graph.set("contact.email", to: "bob at example")
        } throws: { error in
            guard case GraphError.validationFailed(let path, _) = error else { return false }
            return path == "contact.email"
        }
        #expect(try graph.get("contact.email") == "bob@example.com")
        #expect {
            try graph.set("contact.name", to: .string(String(repeating: "x", count: 101)))
        } throws: { error in
            guard case GraphError.validationFailed = error else { return false }
            return true
        }
    }

    @Test func computedKeysAreReadOnlyAndTypedClassesClosed() throws {
        let graph = Graph(model: try Self.load())
        #expect(throws: GraphError.readOnly(path: "labColor.color")) { try graph.set("labColor.color", to: "#FFFFFF") }
        #expect(throws: GraphError.undefinedKey(path: "labColor.nope")) { try graph.get("labColor.nope") }
        #expect(throws: GraphError.undefinedKey(path: "person.middleName")) {
            try graph.set("person.middleName", to: "x")
        }
        // The root is open.
        try graph.set("scratch.anything", to: 1)
        #expect(try graph.get("scratch.anything") == 1)
    }

    @Test func openingBalanceIncrementsItemChangedOnlyOnChange() throws {
        let graph = Graph(model: try Self.load())
        #expect(try graph.get("account.itemChanged") == 0)
        try graph.set("account.openingBalance", to: 10)
        #expect(try graph.get("account.openingBalance") == .double(10))
        #expect(try graph.get("account.itemChanged") == 1)
        try graph.set("account.openingBalance", to: 10.0)
        #expect(try graph.get("account.itemChanged") == 1)
        try graph.set("account.openingBalance", to: 20)
        #expect(try graph.get("account.itemChanged") == 2)
    }

    @Test func departmentTotalSalaryFollowsTheEmployees() throws {
        let graph = Graph(model: try Self.load())
        #expect(try graph.get("department.totalSalary") == .int(0))
        try graph.mutate(KeyPath(parsing: "department.employees"), .append([.record(Record(["name": "Grace", "salary": 5000]))]))
        try graph.mutate(KeyPath(parsing: "department.employees"), .append([.record(Record(["name": "Ada", "salary": 100]))]))
        #expect(try graph.get("department.totalSalary") == .double(5100))
        try graph.mutate(KeyPath(parsing: "department.tags"), .union(["core", "core", "ops"]))
        #expect(try graph.get("department.tags") == ["core", "ops"])
        try graph.set("department.manager", to: .record(Record(["name": "Grace", "salary": 5000])))
        #expect {
            try graph.set("department.manager.salary", to: -1)
        } throws: { error in
            guard case GraphError.validationFailed = error else { return false }
            return true
        }
    }
}

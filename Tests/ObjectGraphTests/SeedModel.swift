// The seeds' examples defined with the Swift API: LabColor's dependent keys, Person's fullName and address,
// Account's nested manual-style notification, Contact's validation. Used by the model and dependency tests.
import ObjectGraph

enum SeedModel {
    static func inverse(_ t: Double) -> Double {
        t > 6.0 / 29.0 ? t * t * t : 3 * (6.0 / 29.0) * (6.0 / 29.0) * (t - 4.0 / 29.0)
    }

    static func number(_ value: Value) -> Double {
        switch value {
        case .int(let number): Double(number)
        case .double(let number): number
        default: 0
        }
    }

    static let labColor = ObjectClass(
        name: "LabColor", isOpen: false,
        properties: [
            .stored("lComponent", StoredProperty(type: .double, defaultValue: 53.0, isNullable: false, nullPolicy: .replace(0.0))),
            .stored("aComponent", StoredProperty(type: .double, defaultValue: 0.0)),
            .stored("bComponent", StoredProperty(type: .double, defaultValue: 0.0)),
            .computed("redComponent", dependsOn: ["lComponent"]) { read in
                .double(100 * inverse((number(read("lComponent")) + 16) / 116))
            },
            .computed("greenComponent", dependsOn: ["lComponent", "aComponent"]) { read in
                .double(95.047 * inverse((number(read("lComponent")) + 16) / 116 + number(read("aComponent")) / 500))
            },
            .computed("blueComponent", dependsOn: ["lComponent", "bComponent"]) { read in
                .double(108.883 * inverse((number(read("lComponent")) + 16) / 116 - number(read("bComponent")) / 200))
            },
            .computed("color", dependsOn: ["redComponent", "greenComponent", "blueComponent"]) { read in
                let parts = ["redComponent", "greenComponent", "blueComponent"].map { key -> String in
                    let byte = Int((min(max(number(read(key)) * 0.01, 0), 1) * 255).rounded())
                    let hex = String(byte, radix: 16, uppercase: true)
                    return hex.count == 1 ? "0" + hex : hex
                }
                return .string("#" + parts.joined())
            },
        ])

    static let address = ObjectClass(
        name: "Address", isOpen: false,
        properties: [
            .stored("street", StoredProperty(type: .string, defaultValue: "")),
            .stored("city", StoredProperty(type: .string, defaultValue: "")),
        ])

    static let person = ObjectClass(
        name: "Person", isOpen: false,
        properties: [
            .stored("firstName", StoredProperty(type: .string, defaultValue: "")),
            .stored("lastName", StoredProperty(type: .string, defaultValue: "")),
            .stored("address", StoredProperty(type: .object("Address"), defaultValue: .record(Record()))),
            .computed("fullName", dependsOn: ["firstName", "lastName"]) { read in
                guard case .string(let first) = read("firstName"), case .string(let last) = read("lastName") else {
                    return .null
                }
                return .string("\(first) \(last)")
            },
            .computed("cityLabel", dependsOn: ["address.city"]) { read in
                guard case .string(let city) = read("address.city") else { return .null }
                return .string("City: \(city)")
            },
        ])

    static let account = ObjectClass(
        name: "Account", isOpen: false,
        properties: [
            .stored(
                "openingBalance",
                StoredProperty(
                    type: .double, defaultValue: 0.0, notification: .onChange,
                    sideEffects: [.increment(key: "itemChanged", by: 1)])),
            .stored("itemChanged", StoredProperty(type: .int, defaultValue: 0)),
            .stored("name", StoredProperty(type: .string)),
        ])

    static let contact = ObjectClass(
        name: "Contact", isOpen: false,
        properties: [
            .stored("name", StoredProperty(type: .string, rules: [.trim, .maxLength(10)])),
            .stored("email", StoredProperty(type: .string, rules: [.pattern(#"^[^@\s]+@[^@\s]+\.[^@\s]+$"#)])),
            .stored("age", StoredProperty(type: .int, rules: [.min(0), .max(150)])),
            .stored("score", StoredProperty(type: .double, isNullable: false, nullPolicy: .reject)),
            .stored("level", StoredProperty(type: .string, rules: [.oneOf(["low", "high"])])),
            .stored(
                "nickname",
                StoredProperty(type: .string) { value throws(ValidationFailure) in
                    if case .string(let text) = value, text.lowercased() == "admin" {
                        throw ValidationFailure("nickname 'admin' is reserved")
                    }
                    return value
                }),
        ])

    static let root = ObjectClass(
        name: "Root", isOpen: true,
        properties: [
            .stored("labColor", StoredProperty(type: .object("LabColor"), defaultValue: .record(Record()))),
            .stored("person", StoredProperty(type: .object("Person"), defaultValue: .record(Record()))),
            .stored("account", StoredProperty(type: .object("Account"), defaultValue: .record(Record()))),
            .stored("contact", StoredProperty(type: .object("Contact"), defaultValue: .record(Record()))),
        ])

    static func makeModel() throws -> Model {
        try Model(root: root, classes: [labColor, address, person, account, contact])
    }

    static func makeGraph() throws -> Graph {
        Graph(model: try makeModel())
    }
}

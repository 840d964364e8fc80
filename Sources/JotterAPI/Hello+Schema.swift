import JotterWire

extension HelloMessage: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(["message": .string(example: "Hello Bob!")], additional: .forbidden)
    }
}

extension HealthStatus: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(["status": .string(enum: ["ok"])], additional: .forbidden)
    }
}

import JotterWire

extension UserInfo: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(
            [
                "id": .string(pattern: "^[0-9]+$"),
                "name": .string(example: "ann"),
                "admin": .boolean(description: "may manage users"),
                "created_at": Timestamp.schema,
            ], additional: .forbidden)
    }
}

extension SessionInfo: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(
            [
                "user": .ref(UserInfo.self),
                "csrf_token": .string(pattern: "^[0-9a-f]{32}$", description: "for a session: send it as `X-CSRF-Token` on every write"),
                "expires_at": Timestamp.schema(description: "when the session or token ends; absent when it does not"),
            ], optional: ["csrf_token", "expires_at"], additional: .forbidden)
    }
}

extension TokenInfo: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(
            [
                "id": .string(pattern: "^[0-9]+$", description: "what `DELETE /auth/tokens/{id}` takes"),
                "label": .string(),
                "created_at": Timestamp.schema,
                "last_used_at": Timestamp.schema(description: "to the minute; absent when never used"),
                "expires_at": Timestamp.schema(description: "absent when it does not expire"),
                "revoked_at": Timestamp.schema(description: "absent unless revoked"),
            ], optional: ["last_used_at", "expires_at", "revoked_at"], additional: .forbidden)
    }
}

extension TokenList: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(["tokens": .array(of: .ref(TokenInfo.self), description: "newest first, revoked ones included")], additional: .forbidden)
    }
}

extension IssuedToken: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(
            [
                "token": .string(pattern: "^jot_[0-9A-Za-z]{36}$", description: "the secret, shown this once; only its SHA-256 is kept"),
                "info": .ref(TokenInfo.self),
                "user": .ref(UserInfo.self),
            ], additional: .forbidden)
    }
}

extension UserList: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(["users": .array(of: .ref(UserInfo.self), description: "in the order they were added")], additional: .forbidden)
    }
}

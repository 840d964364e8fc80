import Dispatch
import JotterAPI
import JotterHTTP
import JotterStore

/// `/users`: user management for administrators (what `jotter users … --server` uses).
struct UsersController {
    let accounts: Accounts

    func register(in routes: inout RouterBuilder) {
        routes.get("/users", operation: UsersOperations.list, handler: list)
        routes.post("/users", body: .buffered(limit: 16 << 10), operation: UsersOperations.add, handler: add)
        routes.put("/users/:name/password", body: .buffered(limit: 16 << 10), operation: UsersOperations.password, handler: password)
        routes.delete("/users/:name", body: .noBody, operation: UsersOperations.remove, handler: remove)
    }

    @Sendable func list(_ request: Request, _ context: RequestContext) throws -> JSON<UserList> {
        JSON(UserList(users: try accounts.store.users().map(UserInfo.init)))
    }

    @Sendable func add(_ request: Request, _ context: RequestContext) throws -> Reply {
        let body = try request.body()
        let name = try body.string("name") ?? "", password = try body.string("password") ?? ""
        let adminText = try body.string("admin")?.lowercased() ?? "false"
        guard UsersOperations.adminValues.contains(adminText) else {
            throw HTTPError.validation([.init(field: "admin", message: "must be true or false")])
        }
        let admin = ["true", "1", "yes", "on"].contains(adminText)
        guard UserName.isValid(name) else { throw HTTPError.validation([.init(field: "name", message: UserName.rule)]) }
        guard password.count >= 8 else { throw HTTPError.validation([.init(field: "password", message: "needs at least 8 characters")]) }
        let accounts = self.accounts
        return Reply.later { done in
            accounts.hashing.run(orRefuse: done) {
                let hash = Result { try PasswordHash.make(password) }
                guard case .success(let hash) = hash else { done { throw HTTPError(.internalServerError) }; return }
                accounts.store.submit(.addUser(name: name, passwordHash: hash, isAdmin: admin)) { result in
                    accounts.usersChanged()
                    done {
                        guard case .user(let user) = try result.get() else {
                            throw HTTPError(HTTPStatus(409), detail: "a user named \(name) exists already")
                        }
                        return try JSON(
                            UserInfo(user), status: .created, headers: HTTPHeaders([("Location", "/users/\(FormFields.escape(user.name))")])
                        )
                        .response(for: request)
                    }
                }
            }
        }
    }

    @Sendable func password(_ request: Request, _ context: RequestContext) throws -> Reply {
        let user = try existing(context)
        let password = try request.body().string("password") ?? ""
        guard password.count >= 8 else { throw HTTPError.validation([.init(field: "password", message: "needs at least 8 characters")]) }
        let accounts = self.accounts
        return Reply.later { done in
            accounts.hashing.run(orRefuse: done) {
                guard let hash = try? PasswordHash.make(password) else { done { throw HTTPError(.internalServerError) }; return }
                accounts.store.submit(.setPassword(userID: user.id, passwordHash: hash)) { result in
                    accounts.forget(user: user.id)  // its sessions were ended
                    done {
                        _ = try result.get()
                        return Response(status: .noContent)
                    }
                }
            }
        }
    }

    @Sendable func remove(_ request: Request, _ context: RequestContext) throws -> Reply {
        let user = try existing(context)
        let accounts = self.accounts
        return Reply.later { done in
            accounts.store.submit(.removeUser(userID: user.id)) { result in
                if case .success(.lastAdministrator) = result {
                    done { throw HTTPError(HTTPStatus(409), detail: AccountWriteResult.lastAdministratorDetail(user.name)) }
                    return
                }
                accounts.forget(user: user.id)
                done {
                    _ = try result.get()
                    return Response(status: .noContent)
                }
            }
        }
    }

    private func existing(_ context: RequestContext) throws -> UserRecord {
        let name = context.parameters["name"] ?? ""
        guard let user = try accounts.store.user(named: name) else { throw HTTPError(.notFound, detail: "no user is named \(name)") }
        return user
    }
}

/// The OpenAPI operations of `UsersController`.
enum UsersOperations {
    static let name = OpenAPIParameter.path("name", .string(), description: "the user's name")
    static let forbidden = OpenAPIResponse.problem("the token or session is not an administrator's")

    static let list = OpenAPIOperation(
        operationID: "listUsers", summary: "List the users (administrators)", tags: ["users"],
        responses: [200: .json(.ref(UserList.self), "the users"), 401: AuthOperations.unauthorized, 403: forbidden])

    /// What `admin` may be (any case): the first four make an administrator.
    static let adminValues = ["true", "1", "yes", "on", "false", "0", "no", "off"]

    static let add = OpenAPIOperation(
        operationID: "addUser", summary: "Add a user (administrators)",
        description: "The first user ever added takes over the notes and uploads stored before there were users.",
        tags: ["users"],
        requestBody: .fields(
            .object(
                [
                    "name": .string(pattern: "^[\\p{L}0-9._@-]+$", maxLength: 64, description: "letters, digits and `. _ - @`"),
                    "password": .string(minLength: 8),
                    "admin": .string(enum: adminValues, description: "`true`, `1`, `yes` or `on` (any case) make an administrator"),
                ], optional: ["admin"]), required: true),
        responses: [
            201: .json(.ref(UserInfo.self), "added"), 400: AuthOperations.malformed, 401: AuthOperations.unauthorized, 403: forbidden,
            409: .problem("the name is taken"), 422: .problem("the name or the password is not acceptable"),
        ])

    static let password = OpenAPIOperation(
        operationID: "setPassword", summary: "Set a user's password (administrators)",
        description: "The user's web sessions end; their API tokens stay.", tags: ["users"],
        parameters: [name],
        requestBody: .fields(.object(["password": .string(minLength: 8)]), required: true),
        responses: [
            204: .empty("changed"), 401: AuthOperations.unauthorized, 403: forbidden, 404: .problem("no such user"),
            422: .problem("the password is too short"),
        ])

    static let remove = OpenAPIOperation(
        operationID: "removeUser", summary: "Remove a user with their notes and uploads (administrators)", tags: ["users"],
        parameters: [name],
        responses: [
            204: .empty("removed"), 401: AuthOperations.unauthorized, 403: forbidden, 404: .problem("no such user"),
            409: .problem("the user is the last administrator; nothing changed"),
        ])
}

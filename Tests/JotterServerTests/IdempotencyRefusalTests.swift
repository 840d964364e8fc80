import Testing
import JotterHTTP
import JotterStore
@testable import JotterServer

/// Issue 31 item 3: a retry that finds its key still running was told `409` with no hint of
/// when to come back, so a client (the SDK) could only give up.
@Suite("Idempotency-Key refusals")
struct IdempotencyRefusalTests {
    @Test("409 still running carries Retry-After")
    func stillRunningSaysWhen() throws {
        do {
            _ = try IdempotencyMiddleware.refusal(.running)
            Issue.record("a running key was not refused")
        } catch let error as HTTPError {
            #expect(error.status.code == 409)
            #expect(error.headers["Retry-After"] == "1")
        }
    }
}

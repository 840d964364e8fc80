-- POST the bytes of a file with a given Content-Type, the same request every time.
-- wrk ... URL -- BODY_FILE CONTENT_TYPE
-- The peers scenario writes each request body (form-urlencoded or multipart) to a file once,
-- so jotter and every original server get exactly the same bytes.
function init(args)
    local path = assert(args[1], "usage: wrk -s post_file.lua URL -- BODY_FILE CONTENT_TYPE")
    local f = assert(io.open(path, "rb"))
    wrk.body = f:read("*a")
    f:close()
    wrk.method = "POST"
    wrk.headers["Content-Type"] = assert(args[2], "CONTENT_TYPE missing")
end

-- POST a multipart/form-data body with one file part of KIB KiB (default 100) of random bytes.
-- wrk ... URL -- [KIB]
-- The body is built once in init() (fixed boundary, fixed seed), so every request is the same
-- bytes and wrk spends its time sending, not building. Used against jotter /uploads (every
-- request stores one file) and nginx /upload-clean.
local boundary = "----JotterBenchBoundary7f3a9c2e5b1d4086"

function init(args)
    local kib = tonumber(args[1] or "100")
    assert(kib and kib > 0, "usage: wrk -s upload_post.lua URL -- KIB")
    math.randomseed(4242)
    local bytes = {}
    for i = 1, kib * 1024 do
        bytes[i] = string.char(math.random(0, 255))
    end
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "multipart/form-data; boundary=" .. boundary
    wrk.body = "--" .. boundary .. "\r\n"
        .. 'Content-Disposition: form-data; name="file"; filename="bench.bin"\r\n'
        .. "Content-Type: application/octet-stream\r\n\r\n"
        .. table.concat(bytes)
        .. "\r\n--" .. boundary .. "--\r\n"
end

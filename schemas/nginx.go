package schemas

// NginxAccess is the schema of one nginx/<proxy>/access.jsonl line (collect/nginx.AccessRecord), written by
// `rlbench collect nginx-access-log --out`.
const NginxAccess = "nginx-access.v1.schema.json"

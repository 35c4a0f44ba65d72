package schemas

// File names of the parsed nginx evidence files' schemas (evidence.Nginx*Schema).
const (
	// NginxAccess is the schema of one nginx/<proxy>/access.jsonl line (evidence/nginxrec.AccessRecord), written by
	// `rlbench collect nginx-access-log --out`.
	NginxAccess = "nginx-access.v1.schema.json"
	// NginxLimitReq is the schema of one nginx/<proxy>/limit_req.jsonl line (evidence/nginxrec.ErrorEntry).
	NginxLimitReq = "nginx-limit-req.v1.schema.json"
	// NginxStubStatus is the schema of nginx/<proxy>/stub_status.<label>.json (evidence/nginxrec.StubStatus).
	NginxStubStatus = "nginx-stub-status.v1.schema.json"
)

// HAProxyLog is the schema of one haproxy/<proxy>/log.jsonl line (evidence/haproxyrec.LogRecord, evidence.HAProxyLogSchema).
const HAProxyLog = "haproxy-log.v1.schema.json"

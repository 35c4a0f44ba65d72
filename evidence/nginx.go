package evidence

import "path/filepath"

// nginx evidence: one directory per nginx proxy, named by its attack target name, under NginxDir:
//
//	nginx/<proxy>/nginx.conf               the config the instance ran (rendered by rlbench for a private nginx)
//	nginx/<proxy>/access.log               raw JSON access log (log_format escape=json)
//	nginx/<proxy>/access.jsonl             parsed: one evidence/nginxrec.AccessRecord per request
//	nginx/<proxy>/error.log                raw error log
//	nginx/<proxy>/limit_req.jsonl          parsed: one evidence/nginxrec.ErrorEntry per limit_req line
//	nginx/<proxy>/stub_status.<label>.txt  raw stub_status page (label: before|after)
//	nginx/<proxy>/stub_status.<label>.json parsed: evidence/nginxrec.StubStatus
const (
	NginxDir           = "nginx"
	NginxConfFile      = "nginx.conf"
	NginxAccessLogFile = "access.log"
	NginxAccessFile    = "access.jsonl"
	NginxErrorLogFile  = "error.log"
	NginxLimitReqFile  = "limit_req.jsonl"
)

// Schema IDs of the parsed nginx evidence files (see the Schema IDs of layout.go).
const (
	// NginxAccessSchema is the schema of one access.jsonl line (evidence/nginxrec.AccessRecord).
	NginxAccessSchema = "rlbench.nginx-access/v1"
	// NginxLimitReqSchema is the schema of one limit_req.jsonl line (evidence/nginxrec.ErrorEntry).
	NginxLimitReqSchema = "rlbench.nginx-limit-req/v1"
	// NginxStubStatusSchema is the schema of stub_status.<label>.json (evidence/nginxrec.StubStatus).
	NginxStubStatusSchema = "rlbench.nginx-stub-status/v1"
)

// NginxPath returns nginx/<proxy>/<name>, the place of one nginx evidence file (name is one of the Nginx*File
// constants or a NginxStubStatus* name) relative to the evidence directory.
func NginxPath(proxy, name string) string { return filepath.Join(NginxDir, proxy, name) }

// NginxStubStatusRaw is the file name of a raw stub_status page taken at label ("before", "after").
func NginxStubStatusRaw(label string) string { return "stub_status." + label + ".txt" }

// NginxStubStatusJSON is the file name of a parsed stub_status page taken at label.
func NginxStubStatusJSON(label string) string { return "stub_status." + label + ".json" }

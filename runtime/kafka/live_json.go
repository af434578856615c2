package kafka

import "faultline/runtime"

// orderIDOf returns the order_id of a record as runtime.Verify reads it (see
// runtime.OrderIDOf, which scans flat records by hand and leaves anything
// else to encoding/json, so that the live verdict and the final oracle read
// every record alike).
func orderIDOf(b []byte) (id []byte, ok bool) { return runtime.OrderIDOf(b) }

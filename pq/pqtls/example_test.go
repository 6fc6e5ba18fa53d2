package pqtls_test

import (
	"fmt"

	"github.com/wardlab/ward/pq/pqtls"
)

// How many extra round trips TCP slow start costs a server flight, by
// chain size (the lab's model).
func ExampleExtraRoundTrips() {
	for _, flight := range []int{2385, 15865, 21099, 50000} {
		fmt.Println(flight, pqtls.ExtraRoundTrips(flight, pqtls.InitialWindow))
	}
	// Output:
	// 2385 0
	// 15865 1
	// 21099 1
	// 50000 2
}

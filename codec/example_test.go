package codec_test

import (
	"fmt"

	"github.com/corral-go/corral/codec"
)

type order struct {
	ID   int    `json:"id"`
	Item string `json:"item"`
}

// A codec turns a value into a payload and back: JSON for a typed
// handler's messages by default, or any of these for a typed bucket.
func ExampleJSON() {
	var c codec.Codec[order] = codec.JSON[order]{}
	data, err := c.Encode(order{ID: 7, Item: "widget"})
	fmt.Println(string(data), err)
	o, err := c.Decode([]byte(`{"id":8,"item":"bolt"}`))
	fmt.Println(o, err)
	// Output:
	// {"id":7,"item":"widget"} <nil>
	// {8 bolt} <nil>
}

// SPDX-License-Identifier: Apache-2.0
/** C_SINK: the end of a line that acks, counts distinct ids and optionally echoes. Not exported. */
package io.gatehouse.sink;

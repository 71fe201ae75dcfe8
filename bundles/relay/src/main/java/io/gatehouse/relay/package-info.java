// SPDX-License-Identifier: Apache-2.0
/** C_RELAY: forwards what input gates receive to an output gate, acking upstream once the output has it. Not exported. */
package io.gatehouse.relay;

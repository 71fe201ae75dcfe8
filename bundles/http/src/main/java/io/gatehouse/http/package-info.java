// SPDX-License-Identifier: Apache-2.0
/** C_PROT_HTTP_SR: HTTP/1.1 ingest under C_CHANNEL, on Netty's codec-http. Exports nothing. */
package io.gatehouse.http;

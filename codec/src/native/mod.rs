//! Native tool-call formats. (skeleton)
